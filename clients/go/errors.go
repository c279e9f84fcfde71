package fencegate

import (
	"errors"
	"fmt"

	smithy "github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Reasons a lease ends, as Lease.Reason reports them.
const (
	ReasonSuperseded  = "superseded"  // a newer token was granted, or the gateway holds no lease of ours
	ReasonExpired     = "expired"     // the deadline passed while this process could not renew
	ReasonUnreachable = "unreachable" // renewals failed or went unanswered until the deadline
	ReasonReleased    = "released"    // Release was called
)

// ErrLockHeld is what LockHeldError matches with errors.Is.
var ErrLockHeld = errors.New("fencegate: lock held")

// LockHeldError: the lock was still held by another holder after WaitMs.
type LockHeldError struct {
	Lock        string
	Holder      string
	Token       uint64
	ExpiresInMs int64
}

func (e *LockHeldError) Error() string {
	return fmt.Sprintf("fencegate: %s is held by %q (token %d, expires in %d ms)",
		e.Lock, e.Holder, e.Token, e.ExpiresInMs)
}

// Is makes errors.Is(err, ErrLockHeld) hold.
func (e *LockHeldError) Is(target error) bool { return target == ErrLockHeld }

// LeaseLost: the lease is gone (or was never confirmed in time); the write
// that returned it was not sent, no attempt of it (a lease found lost before
// a retry is a *WriteOutcomeUnknown instead).
type LeaseLost struct {
	Lock   string
	Token  uint64
	Reason string
}

func (e *LeaseLost) Error() string {
	return fmt.Sprintf("fencegate: lease on %s (token %d) lost: %s", e.Lock, e.Token, e.Reason)
}

// RetryableError tells the SDK's retryer never to retry a write refused locally.
func (e *LeaseLost) RetryableError() bool { return false }

// WriteOutcomeUnknown: an attached client found the lease lost before a
// retry of a write, after an earlier attempt of the same call had been sent
// (its answer never came, or was an error the SDK retries: the write may
// have landed).  The retry was not sent.  Lock, Token and Reason are the
// lost lease's, as in LeaseLost; Err is the earlier attempt's error (the
// *LeaseLost only if none was at hand) and Lost the loss found before the
// retry.  It is NOT a *LeaseLost for errors.As, since "nothing was sent" is
// not true of the call: Unwrap gives the earlier attempt's error, never the
// loss.  Read the object back (or leave it to the next holder) before
// assuming either outcome.
type WriteOutcomeUnknown struct {
	Lock   string
	Token  uint64
	Reason string
	Err    error
	Lost   *LeaseLost
}

func (e *WriteOutcomeUnknown) Error() string {
	return fmt.Sprintf("fencegate: lease on %s (token %d) lost (%s) before a retry: "+
		"an earlier attempt was sent and its outcome is unknown: %v", e.Lock, e.Token, e.Reason, e.Err)
}

// Unwrap is the earlier attempt's error; nil when Err is (or wraps) the
// loss, so that errors.As(err, &lost) never matches an unknown outcome.
func (e *WriteOutcomeUnknown) Unwrap() error {
	var ll *LeaseLost
	if e.Err == nil || errors.As(e.Err, &ll) {
		return nil
	}
	return e.Err
}

// RetryableError: the SDK's retryer must not try again (the retry would
// find the lease lost again, and send nothing).
func (e *WriteOutcomeUnknown) RetryableError() bool { return false }

// GatewayError: the JSON API answered something unexpected (Status > 0), or
// nothing at all (Status 0, Err says why).
type GatewayError struct {
	Op     string
	Status int
	Body   string
	Err    error
}

func (e *GatewayError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("fencegate: %s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("fencegate: %s: HTTP %d: %s", e.Op, e.Status, e.Body)
}

func (e *GatewayError) Unwrap() error { return e.Err }

func (e *GatewayError) transient() bool {
	return e.Status == 0 || e.Status == 429 || e.Status >= 500
}

// FencingError is what every fencing refusal embeds: the S3 error's code and
// message, its HTTP status, and the SDK's error it wraps (Unwrap), so
// smithy.APIError and *smithyhttp.ResponseError checks keep working.
type FencingError struct {
	Code       string
	Message    string
	StatusCode int
	Err        error
}

func (e *FencingError) Error() string {
	return fmt.Sprintf("fencegate: write refused: %s (HTTP %d): %s", e.Code, e.StatusCode, e.Message)
}
func (e *FencingError) Unwrap() error                 { return e.Err }
func (e *FencingError) ErrorCode() string             { return e.Code }
func (e *FencingError) ErrorMessage() string          { return e.Message }
func (e *FencingError) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

// RetryableError: a refused write must never be sent again (the SDK's
// retryer asks this first).
func (e *FencingError) RetryableError() bool { return false }

// Fencing returns the refusal's common part (see AsFencingError).
func (e *FencingError) Fencing() *FencingError { return e }

// StaleFencingToken: the token is lower than the lock's highest (409).
type StaleFencingToken struct{ FencingError }

// FencingLeaseExpired: the token is the highest, but its lease ended (409).
type FencingLeaseExpired struct{ FencingError }

// FencingTokenNotGranted: the token is above every epoch granted (409).
type FencingTokenNotGranted struct{ FencingError }

// MissingFencingToken: a fenced write without a token (428).
type MissingFencingToken struct{ FencingError }

// AsFencingError finds any of the four refusals in err's chain; from a
// client without a lease attached too (the SDK's error with their code).
func AsFencingError(err error) (*FencingError, bool) {
	var f interface{ Fencing() *FencingError }
	if errors.As(err, &f) {
		return f.Fencing(), true
	}
	if typed := fencingError(err); typed != nil && errors.As(typed, &f) {
		return f.Fencing(), true
	}
	return nil, false
}

// fencingError converts an SDK error carrying one of the gateway's fencing
// codes into its typed error; nil for any other error.
func fencingError(err error) error {
	var f interface{ Fencing() *FencingError }
	if errors.As(err, &f) {
		return nil
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		return nil
	}
	base := FencingError{Code: api.ErrorCode(), Message: api.ErrorMessage(), Err: err}
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		base.StatusCode = re.HTTPStatusCode()
	}
	switch base.Code {
	case "StaleFencingToken":
		return &StaleFencingToken{base}
	case "FencingLeaseExpired":
		return &FencingLeaseExpired{base}
	case "FencingTokenNotGranted":
		return &FencingTokenNotGranted{base}
	case "MissingFencingToken":
		return &MissingFencingToken{base}
	}
	return nil
}
