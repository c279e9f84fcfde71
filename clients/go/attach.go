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
//     sent, checked again before each retry attempt;
//   - the gateway's fencing refusals come out as typed errors, converted
//     inside the retry loop, and none is retryable for the SDK's retryer;
//   - a refusal of a write that carried the lease's own lock and token
//     (StaleFencingToken, FencingLeaseExpired) is the gateway's judgment on
//     it: the lease is lost, OnLost run, before the call returns.

import (
	"context"
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
)

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
		if Classify(awsmiddleware.GetOperationName(ctx)) != KindRead {
			if err := l.Check(); err != nil {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, err
			}
		}
		return next.HandleFinalize(ctx, in)
	})
	if err := stack.Finalize.Add(check, middleware.After); err != nil {
		return err
	}
	// Deserialize, first: sees the operation's error before the retryer does.
	_, _ = stack.Deserialize.Remove(mwRefusals)
	refusals := middleware.DeserializeMiddlewareFunc(mwRefusals, func(ctx context.Context,
		in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
		out, md, err := next.HandleDeserialize(ctx, in)
		if err != nil {
			if typed := fencingError(err); typed != nil {
				if req, ok := in.Request.(*smithyhttp.Request); ok &&
					req.Header.Get(headerLock) == l.lock &&
					req.Header.Get(headerToken) == strconv.FormatUint(l.token, 10) {
					l.refused(typed) // lost before the caller sees the error
				}
				return out, md, typed
			}
		}
		return out, md, err
	})
	return stack.Deserialize.Add(refusals, middleware.Before)
}
