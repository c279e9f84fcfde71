package fencegate

// Lease.Attach: the fencing token on every write of an AWS SDK for Go v2 S3
// client, as the gateway expects it (README "Writing through fencegate"):
//
//   - reads (Get*, Head*, List*, Select*) pass untouched, lost lease or not;
//   - multipart parts, UploadPartCopy, Complete and Abort carry the lock only
//     (X-Fencing-Lock): the gateway claims them with the epoch that created
//     the upload, so a newer leader can never commit a zombie's parts;
//   - every other operation (PutObject, CopyObject, DeleteObject(s),
//     CreateMultipartUpload, tagging, ACLs...) carries X-Fencing-Token and
//     X-Fencing-Lock;
//   - once the lease is lost, a write returns *LeaseLost before anything is
//     sent; checked again before each retry attempt, where a loss returns
//     *WriteOutcomeUnknown instead (an earlier attempt may have been sent
//     and landed), the retry not sent; neither is retryable for the SDK.
//     An attempt whose connection was never made (a dial error) sent
//     nothing and does not count;
//   - the gateway's fencing refusals come out as typed errors, converted
//     inside the retry loop, and none is retryable for the SDK's retryer;
//   - a refusal (StaleFencingToken, FencingLeaseExpired) whose document names
//     the lease's lock and token (<Lock>, <Token>; parts, Complete and Abort
//     included, claimed with the upload's epoch), or, in a document without
//     them, of a write that carried the lease's lock and token, is the
//     gateway's judgment on the lease: lost, OnLost run, before the call
//     returns.

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

const (
	headerLock  = "X-Fencing-Lock"
	headerToken = "X-Fencing-Token"
	mwHeaders   = "fencegate.Headers"
	mwCheck     = "fencegate.Check"
	mwRefusals  = "fencegate.Refusals"
	mwDocument  = "fencegate.RefusalDocument"
)

// attempts: one write operation's attempts, shared by its Build step (once
// per call) and its per-attempt check inside the retry loop (the SDK's
// attempts are sequential, in one goroutine).
type attempts struct {
	sent    int   // attempts let through to the transport that may have left
	lastErr error // the latest such one's error
}

// neverConnected: an attempt's error that says no byte of it left, because
// its connection was never made (refused, unreachable, a name not
// resolved, a dial timeout): net/http's dial errors are a *net.OpError with
// Op "dial".  A write or read error on a made connection may have sent it.
func neverConnected(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

type attemptsKey struct{}

// refusalDoc: the <Lock> and <Token> of a 409 error document, read by the
// innermost Deserialize middleware for the Refusals middleware (the SDK's
// error keeps only Code and Message).
type refusalDoc struct {
	Lock  string `xml:"Lock"`
	Token string `xml:"Token"`
}

type refusalDocKey struct{}

// maxRefusalDoc bounds how much of a 409's body is read ahead of the SDK.
const maxRefusalDoc = 64 << 10

// Operation kinds, as Classify returns them.
const (
	KindRead  = "read"  // untouched
	KindPart  = "part"  // the lock only: claimed with the upload's epoch
	KindWrite = "write" // the lock and the token
)

var continuation = map[string]bool{
	"UploadPart": true, "UploadPartCopy": true, "CompleteMultipartUpload": true,
	"AbortMultipartUpload": true,
}

// Classify says what an S3 operation carries through the gateway.
func Classify(operation string) string {
	for _, p := range []string{"Get", "Head", "List", "Select"} {
		if strings.HasPrefix(operation, p) {
			return KindRead
		}
	}
	if continuation[operation] {
		return KindPart
	}
	return KindWrite
}

// Attach is an s3.Options function: pass it to s3.NewFromConfig (every call
// of that client) or to one call (client.PutObject(ctx, in, lease.Attach)).
// A later Attach on the same options replaces an earlier lease's.
func (l *Lease) Attach(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, l.AddMiddleware)
}

// AddMiddleware installs the lease's middleware on an SDK operation's stack
// (for APIOptions, or any smithy-go client that speaks S3 to the gateway).
func (l *Lease) AddMiddleware(stack *middleware.Stack) error {
	// Build: once per call, before signing and before the retry loop.
	_, _ = stack.Build.Remove(mwHeaders)
	headers := middleware.BuildMiddlewareFunc(mwHeaders, func(ctx context.Context,
		in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
		kind := Classify(awsmiddleware.GetOperationName(ctx))
		if kind == KindRead {
			return next.HandleBuild(ctx, in)
		}
		if err := l.Check(); err != nil {
			return middleware.BuildOutput{}, middleware.Metadata{}, err
		}
		ctx = context.WithValue(ctx, attemptsKey{}, &attempts{})
		if req, ok := in.Request.(*smithyhttp.Request); ok {
			req.Header.Set(headerLock, l.lock)
			if kind == KindWrite {
				req.Header.Set(headerToken, strconv.FormatUint(l.token, 10))
			} else {
				req.Header.Del(headerToken)
			}
		}
		return next.HandleBuild(ctx, in)
	})
	if err := stack.Build.Add(headers, middleware.After); err != nil {
		return err
	}
	// Finalize, last: inside the retry loop and after signing, once per attempt.
	_, _ = stack.Finalize.Remove(mwCheck)
	check := middleware.FinalizeMiddlewareFunc(mwCheck, func(ctx context.Context,
		in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
		if Classify(awsmiddleware.GetOperationName(ctx)) == KindRead {
			return next.HandleFinalize(ctx, in)
		}
		at, _ := ctx.Value(attemptsKey{}).(*attempts)
		if err := l.Check(); err != nil {
			var lost *LeaseLost
			if at != nil && at.sent > 0 && errors.As(err, &lost) {
				// A retry: the earlier attempt may have landed.
				cause := at.lastErr
				if cause == nil {
					cause = lost
				}
				return middleware.FinalizeOutput{}, middleware.Metadata{}, &WriteOutcomeUnknown{
					Lock: lost.Lock, Token: lost.Token, Reason: lost.Reason, Err: cause, Lost: lost}
			}
			return middleware.FinalizeOutput{}, middleware.Metadata{}, err
		}
		if at == nil {
			return next.HandleFinalize(ctx, in)
		}
		out, md, err := next.HandleFinalize(ctx, in)
		if !neverConnected(err) {
			at.sent++
			at.lastErr = err
		}
		return out, md, err
	})
	if err := stack.Finalize.Add(check, middleware.After); err != nil {
		return err
	}
	// Deserialize, first: sees the operation's error before the retryer does.
	_, _ = stack.Deserialize.Remove(mwRefusals)
	refusals := middleware.DeserializeMiddlewareFunc(mwRefusals, func(ctx context.Context,
		in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		doc := &refusalDoc{}
		out, md, err := next.HandleDeserialize(context.WithValue(ctx, refusalDocKey{}, doc), in)
		if err != nil {
			if typed := fencingError(err); typed != nil {
				if l.judged(in.Request, doc) {
					l.refused(typed) // lost before the caller sees the error
				}
				return out, md, typed
			}
		}
		return out, md, err
	})
	if err := stack.Deserialize.Add(refusals, middleware.Before); err != nil {
		return err
	}
	// Deserialize, last: the raw response before the SDK reads its body.
	_, _ = stack.Deserialize.Remove(mwDocument)
	document := middleware.DeserializeMiddlewareFunc(mwDocument, func(ctx context.Context,
		in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleDeserialize(ctx, in)
		doc, _ := ctx.Value(refusalDocKey{}).(*refusalDoc)
		if resp, ok := out.RawResponse.(*smithyhttp.Response); ok && err == nil && doc != nil &&
			resp.StatusCode == 409 && resp.Body != nil {
			readRefusalDoc(resp, doc)
		}
		return out, md, err
	})
	return stack.Deserialize.Add(document, middleware.After)
}

// readRefusalDoc fills doc from a 409's error document and puts the bytes
// read back in front of the body, for the SDK's deserializer.
func readRefusalDoc(resp *smithyhttp.Response, doc *refusalDoc) {
	body := resp.Body
	buf, rerr := io.ReadAll(io.LimitReader(body, maxRefusalDoc))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf), body), body}
	if rerr != nil || len(buf) == maxRefusalDoc {
		return // cut short: judged by the request's headers, as without a document
	}
	var d refusalDoc
	if xml.Unmarshal(buf, &d) == nil {
		doc.Lock, doc.Token = strings.TrimSpace(d.Lock), strings.TrimSpace(d.Token)
	}
}

// judged: a fencing refusal is the gateway's judgment on this lease when its
// document names the lease's lock and token, whatever the request carried
// (a part, Complete or Abort carries the lock only, and is claimed with the
// upload's epoch: this lease's when it created the upload).  A document
// naming neither falls back on the request: it carried the lease's lock and
// token.
func (l *Lease) judged(request interface{}, doc *refusalDoc) bool {
	token := strconv.FormatUint(l.token, 10)
	if doc.Lock != "" || doc.Token != "" {
		return doc.Lock == l.lock && doc.Token == token
	}
	req, ok := request.(*smithyhttp.Request)
	return ok && req.Header.Get(headerLock) == l.lock && req.Header.Get(headerToken) == token
}
