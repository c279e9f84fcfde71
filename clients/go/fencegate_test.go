package fencegate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithy "github.com/aws/smithy-go"
)

// fakeGateway answers the JSON API: acquire grants (or says held), renew
// answers with renewStatus (or hangs while hang is set), release confirms.
type fakeGateway struct {
	*httptest.Server
	mu          sync.Mutex
	token       int64
	leaseMs     int64
	held        bool
	hang        chan struct{} // renewals block until it is closed, when non-nil
	renewStatus int
	renewBody   map[string]interface{}
	renews      int32
	releases    int32
	auth        []string
}

func newFake(t *testing.T, leaseMs int64) *fakeGateway {
	f := &fakeGateway{leaseMs: leaseMs, renewStatus: 200}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.mu.Lock()
		if f.hang != nil {
			close(f.hang)
			f.hang = nil
		}
		f.mu.Unlock()
		f.Close()
	})
	return f
}

func (f *fakeGateway) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	reply := func(status int, doc map[string]interface{}) {
		f.mu.Unlock()
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(doc)
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/acquire"):
		if f.held {
			reply(409, map[string]interface{}{"error": "held", "holder": "other", "token": 7, "expires_in_ms": 900})
			return
		}
		f.token++
		reply(200, map[string]interface{}{"token": f.token, "lease_id": "L1", "lease_ms": f.leaseMs})
	case strings.HasSuffix(r.URL.Path, "/renew"):
		atomic.AddInt32(&f.renews, 1)
		if hang := f.hang; hang != nil {
			f.mu.Unlock()
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		body := f.renewBody
		if body == nil {
			body = map[string]interface{}{"token": f.token, "lease_ms": f.leaseMs}
		}
		reply(f.renewStatus, body)
	case strings.HasSuffix(r.URL.Path, "/release"):
		atomic.AddInt32(&f.releases, 1)
		reply(200, map[string]interface{}{})
	default:
		reply(404, map[string]interface{}{"error": "not_found"})
	}
}

func lease(t *testing.T, f *fakeGateway, opts Options) *Lease {
	gw, err := NewGateway(f.URL, opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := gw.Lease(context.Background(), "orders", LeaseOptions{LeaseMs: f.leaseMs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Release() })
	return l
}

func waitDone(t *testing.T, l *Lease, within time.Duration) time.Duration {
	start := time.Now()
	select {
	case <-l.Done():
		return time.Since(start)
	case <-time.After(within):
		t.Fatalf("lease not lost within %v (reason %q)", within, l.Reason())
	}
	return 0
}

func TestRenewalsKeepTheLease(t *testing.T) {
	f := newFake(t, 300)
	l := lease(t, f, Options{})
	time.Sleep(1200 * time.Millisecond) // four leases
	if r := l.Reason(); r != "" {
		t.Fatalf("lost: %s", r)
	}
	if n := l.Renewals(); n < 8 {
		t.Fatalf("%d renewals in four leases, want a third of the lease apart", n)
	}
	if l.Remaining() <= 0 || l.Check() != nil || l.Context().Err() != nil {
		t.Fatal("held, yet Remaining/Check/Context say otherwise")
	}
}

func TestRefusedRenewalLosesAtOnce(t *testing.T) {
	f := newFake(t, 3000)
	l := lease(t, f, Options{})
	var got []string
	l.OnLost(func(reason string) { got = append(got, reason) })
	f.mu.Lock()
	f.renewStatus = 409
	f.renewBody = map[string]interface{}{"error": "superseded", "token": f.token + 1}
	f.mu.Unlock()
	took := waitDone(t, l, 2500*time.Millisecond) // the first renewal, at 1 s, is refused
	if took > 1500*time.Millisecond {
		t.Fatalf("lost %v after the refusal was due", took)
	}
	if l.Reason() != ReasonSuperseded || len(got) != 1 || got[0] != ReasonSuperseded {
		t.Fatalf("reason %q, callbacks %v", l.Reason(), got)
	}
	var ll *LeaseLost
	if err := l.Check(); !errors.As(err, &ll) || ll.Reason != ReasonSuperseded {
		t.Fatalf("Check: %v", err)
	}
	if l.Context().Err() == nil {
		t.Fatal("Context not cancelled on loss")
	}
}

func TestUnreachableIsLostAtTheLocalDeadline(t *testing.T) {
	f := newFake(t, 600)
	l := lease(t, f, Options{})
	deadline := l.Deadline()
	f.mu.Lock()
	f.hang = make(chan struct{}) // every renewal hangs: no answer at all
	f.mu.Unlock()
	waitDone(t, l, 2*time.Second)
	late := time.Since(deadline)
	if late < 0 || late > 150*time.Millisecond {
		t.Fatalf("lost %v after the local deadline", late)
	}
	if l.Reason() != ReasonUnreachable {
		t.Fatalf("reason %q", l.Reason())
	}
}

func TestLockHeldPastWait(t *testing.T) {
	f := newFake(t, 1000)
	f.held = true
	gw, _ := NewGateway(f.URL, Options{})
	start := time.Now()
	_, err := gw.Lease(context.Background(), "orders", LeaseOptions{WaitMs: 300})
	var held *LockHeldError
	if !errors.Is(err, ErrLockHeld) || !errors.As(err, &held) || held.Holder != "other" {
		t.Fatalf("err %v", err)
	}
	if time.Since(start) < 300*time.Millisecond {
		t.Fatal("gave up before WaitMs")
	}
}

func TestReleaseSendsOnceAndNothingAfterALoss(t *testing.T) {
	f := newFake(t, 1000)
	l := lease(t, f, Options{})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	_ = l.Release()
	if l.Reason() != ReasonReleased || atomic.LoadInt32(&f.releases) != 1 {
		t.Fatalf("reason %q, %d releases", l.Reason(), f.releases)
	}
	f2 := newFake(t, 300)
	l2 := lease(t, f2, Options{})
	f2.mu.Lock()
	f2.hang = make(chan struct{})
	f2.mu.Unlock()
	waitDone(t, l2, time.Second)
	_ = l2.Release()
	if atomic.LoadInt32(&f2.releases) != 0 {
		t.Fatal("a release was sent for a lease already lost")
	}
}

func TestSignedOnlyWithCredentials(t *testing.T) {
	f := newFake(t, 1000)
	lease(t, f, Options{})
	lease(t, f, Options{Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")})
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.auth[0] != "" || !strings.HasPrefix(f.auth[1], "AWS4-HMAC-SHA256 Credential=AKID/") {
		t.Fatalf("Authorization headers: %q", f.auth)
	}
}

// fakeS3 records each request's fencing headers and answers with status/body.
type fakeS3 struct {
	*httptest.Server
	mu     sync.Mutex
	seen   []string // "METHOD query lock token"
	status int
	body   string
	during func() // run while a request is in flight, before it is answered
}

func newFakeS3(t *testing.T) *fakeS3 {
	f := &fakeS3{status: 200}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		f.mu.Lock()
		f.seen = append(f.seen, r.Method+" "+r.URL.RawQuery+" "+r.Header.Get(headerLock)+" "+
			r.Header.Get(headerToken))
		status, body, during := f.status, f.body, f.during
		f.mu.Unlock()
		if during != nil {
			during()
		}
		if strings.Contains(r.URL.RawQuery, "uploadId") && r.Method == "POST" && status == 200 {
			body = "<CompleteMultipartUploadResult><ETag>\"x\"</ETag></CompleteMultipartUploadResult>"
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(f.Close)
	return f
}

func s3For(url string, opts ...func(*s3.Options)) *s3.Client {
	return s3.New(s3.Options{
		Region: "us-east-1", UsePathStyle: true,
		EndpointResolver: s3.EndpointResolverFromURL(url),
		Credentials:      credentials.NewStaticCredentialsProvider("AK", "SK", ""),
		Retryer:          retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 5 }),
	}, opts...)
}

func TestAttachHeadersByOperation(t *testing.T) {
	gwf := newFake(t, 5000)
	l := lease(t, gwf, Options{})
	f := newFakeS3(t)
	c := s3For(f.URL, l.Attach)
	ctx := context.Background()
	b, k := aws.String("bkt"), aws.String("orders/x")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: aws.String("u"),
		PartNumber: 1, Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: b, Key: k}); err != nil {
		t.Fatal(err)
	}
	_, _ = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k})
	want := []string{"PUT x-id=PutObject orders 1", "PUT partNumber=1&uploadId=u&x-id=UploadPart orders ",
		"DELETE x-id=DeleteObject orders 1", "HEAD   "}
	f.mu.Lock()
	got := append([]string(nil), f.seen...)
	f.mu.Unlock()
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("requests\n got %q\nwant %q", got, want)
	}
	// After the loss: a write is refused without being sent; reads still go.
	_ = l.Release()
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: b, Key: k, Body: strings.NewReader("y")})
	var ll *LeaseLost
	if !errors.As(err, &ll) || ll.Reason != ReasonReleased {
		t.Fatalf("write after release: %v", err)
	}
	_, _ = c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: b, Key: k})
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.seen) != 5 || !strings.HasPrefix(f.seen[4], "HEAD") {
		t.Fatalf("after the loss the server saw %q", f.seen[4:])
	}
}

func TestRefusalsAreTypedAndNeverRetried(t *testing.T) {
	gwf := newFake(t, 5000)
	f := newFakeS3(t)
	cases := []struct {
		code   string
		status int
		as     func(error) bool
	}{
		{"StaleFencingToken", 409, func(e error) bool { return errors.As(e, new(*StaleFencingToken)) }},
		{"FencingLeaseExpired", 409, func(e error) bool { return errors.As(e, new(*FencingLeaseExpired)) }},
		{"FencingTokenNotGranted", 409, func(e error) bool { return errors.As(e, new(*FencingTokenNotGranted)) }},
		{"MissingFencingToken", 428, func(e error) bool { return errors.As(e, new(*MissingFencingToken)) }},
	}
	var c *s3.Client
	for _, tc := range cases {
		c = s3For(f.URL, lease(t, gwf, Options{}).Attach) // a stale refusal loses its lease
		f.mu.Lock()
		f.status, f.body, f.seen = tc.status, "<Error><Code>"+tc.code+"</Code><Message>no</Message></Error>", nil
		f.mu.Unlock()
		_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"),
			Key: aws.String("orders/x"), Body: bytes.NewReader([]byte("x"))})
		var api smithy.APIError
		fe, ok := AsFencingError(err)
		if !tc.as(err) || !ok || fe.Code != tc.code || fe.StatusCode != tc.status ||
			!errors.As(err, &api) || api.ErrorCode() != tc.code {
			t.Fatalf("%s: %T %v", tc.code, err, err)
		}
		f.mu.Lock()
		n := len(f.seen)
		f.mu.Unlock()
		if n != 1 {
			t.Fatalf("%s: sent %d times, want once", tc.code, n)
		}
	}
	// From a client without the lease: the SDK's error, which AsFencingError still knows.
	_, err := s3For(f.URL).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"),
		Key: aws.String("orders/x"), Body: bytes.NewReader([]byte("x"))})
	if fe, ok := AsFencingError(err); !ok || fe.Code != "MissingFencingToken" || fe.StatusCode != 428 {
		t.Fatalf("unattached: %v", err)
	}
	// Another 409 stays the SDK's own error.
	f.mu.Lock()
	f.status, f.body = 409, "<Error><Code>BucketNotEmpty</Code></Error>"
	f.mu.Unlock()
	_, err = c.DeleteBucket(context.Background(), &s3.DeleteBucketInput{Bucket: aws.String("bkt")})
	if _, ok := AsFencingError(err); ok || err == nil {
		t.Fatalf("BucketNotEmpty: %v", err)
	}
}

func TestElectStopsOnlyAfterStarting(t *testing.T) {
	f := newFake(t, 600)
	gw, _ := NewGateway(f.URL, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var seq []string
	add := func(s string) {
		mu.Lock()
		seq = append(seq, s)
		mu.Unlock()
	}
	terms := 0
	err := gw.Elect(ctx, "orders", func(rctx context.Context, l *Lease) error {
		add("run")
		terms++
		if terms == 2 {
			cancel() // stop the election while leading: run's ctx is cancelled
			<-rctx.Done()
		}
		return nil
	}, ElectOptions{
		OnStarted:   func(l *Lease) { add("started") },
		OnStopped:   func(l *Lease) { add("stopped:" + l.Reason()) },
		OnNewLeader: func(h string, tok uint64) { add("leader") },
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	var calls []string
	for _, s := range seq {
		if s != "leader" {
			calls = append(calls, s)
		}
	}
	want := "started run stopped:released started run stopped:released"
	if strings.Join(calls, " ") != want {
		t.Fatalf("calls %q, want %q", calls, want)
	}
	// A campaign stopped before it leads calls neither.
	f.held = true
	ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	stopped := false
	_ = gw.Elect(ctx2, "orders", func(context.Context, *Lease) error { return nil },
		ElectOptions{OnStopped: func(*Lease) { stopped = true }})
	if stopped {
		t.Fatal("OnStopped without OnStarted")
	}
}

// countingRetryer counts the attempts the SDK's retry loop starts.
type countingRetryer struct {
	aws.RetryerV2
	attempts int32
}

func (r *countingRetryer) GetAttemptToken(ctx context.Context) (func(error) error, error) {
	atomic.AddInt32(&r.attempts, 1)
	return r.RetryerV2.GetAttemptToken(ctx)
}

// TestARetryAfterTheLossIsAnUnknownOutcome: the lease lost while a write's
// first attempt is on the wire (the body reached the server, then a 503 or a
// reset connection), the SDK's retry finds it lost: the retry is not sent,
// and the call returns *WriteOutcomeUnknown (the earlier attempt may have
// landed), never a *LeaseLost ("nothing was sent"), and is not retried.
func TestARetryAfterTheLossIsAnUnknownOutcome(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		answer       func(l *Lease, w http.ResponseWriter)
		cause        func(error) bool
	}{
		{"503", ReasonReleased, func(l *Lease, w http.ResponseWriter) {
			_ = l.Release() // lost while the first attempt is on the wire
			w.WriteHeader(503)
			_, _ = io.WriteString(w, "<Error><Code>SlowDown</Code></Error>")
		}, func(e error) bool {
			var api smithy.APIError
			return errors.As(e, &api) && api.ErrorCode() == "SlowDown"
		}},
		{"reset", ReasonExpired, func(l *Lease, w http.ResponseWriter) {
			l.mu.Lock() // the deadline passes while the write is in flight
			l.watchdog.Stop()
			l.deadline = time.Now().Add(-2 * time.Second)
			l.mu.Unlock()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				panic(err)
			}
			_ = conn.(*net.TCPConn).SetLinger(0) // RST: "connection reset by peer"
			_ = conn.Close()
		}, func(e error) bool { return e != nil && strings.Contains(e.Error(), "connection reset") }},
	} {
		gwf := newFake(t, 5000)
		l := lease(t, gwf, Options{})
		var seen int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // the body reached the store
			atomic.AddInt32(&seen, 1)
			tc.answer(l, w)
		}))
		rt := &countingRetryer{RetryerV2: retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 5 })}
		c := s3For(srv.URL, l.Attach, func(o *s3.Options) { o.Retryer = rt })
		_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"),
			Key: aws.String("orders/x"), Body: bytes.NewReader([]byte("x"))})
		srv.Close()
		var unknown *WriteOutcomeUnknown
		if !errors.As(err, &unknown) || unknown.Reason != tc.reason || unknown.Lock != "orders" ||
			unknown.Token != l.Token() || unknown.Lost == nil || unknown.Lost.Reason != tc.reason {
			t.Fatalf("%s: %T %v", tc.name, err, err)
		}
		if errors.As(err, new(*LeaseLost)) {
			t.Fatalf("%s: an unknown outcome reads as LeaseLost (nothing sent): %v", tc.name, err)
		}
		if !tc.cause(unknown.Err) || errors.Unwrap(unknown) != unknown.Err {
			t.Fatalf("%s: the earlier attempt's error: %T %v", tc.name, unknown.Err, unknown.Err)
		}
		if n := atomic.LoadInt32(&seen); n != 1 {
			t.Fatalf("%s: sent %d times; the retry after the loss must not leave", tc.name, n)
		}
		if n := atomic.LoadInt32(&rt.attempts); n != 2 {
			t.Fatalf("%s: %d attempts; the unknown outcome must not be retried", tc.name, n)
		}
		if retry.NewStandard().IsErrorRetryable(unknown) {
			t.Fatalf("%s: retryable", tc.name)
		}
	}
	// Err the LeaseLost (no earlier error at hand): still not a LeaseLost.
	lost := &LeaseLost{Lock: "orders", Token: 3, Reason: ReasonExpired}
	if e := error(&WriteOutcomeUnknown{Lock: "orders", Token: 3, Reason: ReasonExpired, Err: lost, Lost: lost}); errors.As(e, new(*LeaseLost)) {
		t.Fatal("Unwrap gives the LeaseLost")
	}
}

// betweenAttempts calls fn after each failed attempt the SDK will retry,
// with no backoff.
type betweenAttempts struct {
	aws.RetryerV2
	fn func(attempt int, err error)
}

func (r *betweenAttempts) RetryDelay(attempt int, err error) (time.Duration, error) {
	r.fn(attempt, err)
	return 0, nil
}

// deadURL: an address nothing listens on, so every dial is refused.
func deadURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	_ = ln.Close()
	return url
}

// TestALossAfterRefusedDialsIsLeaseLost: every attempt so far was refused at
// connect (the gateway restarting), so nothing of the write left: a loss
// found before the retry is *LeaseLost, exact, not an unknown outcome.
func TestALossAfterRefusedDialsIsLeaseLost(t *testing.T) {
	gwf := newFake(t, 5000)
	l := lease(t, gwf, Options{})
	var errs []error
	rt := &betweenAttempts{RetryerV2: retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 5 }),
		fn: func(attempt int, err error) {
			errs = append(errs, err)
			if attempt == 2 {
				_ = l.Release()
			}
		}}
	c := s3For(deadURL(t), l.Attach, func(o *s3.Options) { o.Retryer = rt })
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"),
		Key: aws.String("orders/x"), Body: bytes.NewReader([]byte("x"))})
	var lost *LeaseLost
	if !errors.As(err, &lost) || errors.As(err, new(*WriteOutcomeUnknown)) || lost.Reason != ReasonReleased {
		t.Fatalf("%T %v", err, err)
	}
	if len(errs) != 2 || !neverConnected(errs[0]) || !neverConnected(errs[1]) {
		t.Fatalf("attempts: %v", errs)
	}
}

// TestALossAfterASentAttemptThenARefusedDialIsUnknown: the first attempt
// reached the store and was reset, the second was refused at connect: the
// first may have landed, so the loss is *WriteOutcomeUnknown, its cause the
// reset.
func TestALossAfterASentAttemptThenARefusedDialIsUnknown(t *testing.T) {
	gwf := newFake(t, 5000)
	l := lease(t, gwf, Options{})
	var seen int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		atomic.AddInt32(&seen, 1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		_ = conn.(*net.TCPConn).SetLinger(0)
		_ = conn.Close()
	}))
	defer srv.Close()
	rt := &betweenAttempts{RetryerV2: retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 5 }),
		fn: func(attempt int, err error) {
			switch attempt {
			case 1:
				srv.Close() // the next dial is refused
			case 2:
				if !neverConnected(err) {
					t.Errorf("second attempt: %v", err)
				}
				_ = l.Release()
			}
		}}
	c := s3For(srv.URL, l.Attach, func(o *s3.Options) { o.Retryer = rt })
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"),
		Key: aws.String("orders/x"), Body: bytes.NewReader([]byte("x"))})
	var unknown *WriteOutcomeUnknown
	if !errors.As(err, &unknown) || unknown.Lost == nil || unknown.Lost.Reason != ReasonReleased {
		t.Fatalf("%T %v", err, err)
	}
	if unknown.Err == nil || !strings.Contains(unknown.Err.Error(), "connection reset") {
		t.Fatalf("the cause is the sent attempt's error: %v", unknown.Err)
	}
	if n := atomic.LoadInt32(&seen); n != 1 {
		t.Fatalf("sent %d times", n)
	}
}

func TestDeadlineCountsFromTheSend(t *testing.T) {
	f := newFake(t, 1000)
	slow := f.Config.Handler
	f.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond) // every answer takes a fifth of the lease
		slow.ServeHTTP(w, r)
	})
	gw, _ := NewGateway(f.URL, Options{})
	sent := time.Now()
	l, err := gw.Lease(context.Background(), "orders", LeaseOptions{LeaseMs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release() }()
	// counted from the answer, it would be 1.2 s or more after the send
	if d := l.Deadline().Sub(sent); d > time.Second+50*time.Millisecond {
		t.Fatalf("deadline %v after the acquire was sent, past the lease", d)
	}
}

// A process waking from a pause may run its write before any timer fires:
// every read of the lease compares the clock itself.
func TestCheckComparesTheClockItself(t *testing.T) {
	f := newFake(t, 1000)
	gw, _ := NewGateway(f.URL, Options{})
	r := &apiReply{status: 200, doc: map[string]interface{}{"token": 3.0, "lease_id": "L", "lease_ms": 1000.0}}
	l := newLease(gw, "orders", "me", r, stampAgo(950*time.Millisecond))
	if !l.watchdog.Stop() { // no timer will tell: only the clock
		t.Fatal("watchdog already fired")
	}
	time.Sleep(100 * time.Millisecond)
	select {
	case <-l.ctx.Done():
		t.Fatal("lost before anything looked")
	default:
	}
	var ll *LeaseLost
	if err := l.Check(); !errors.As(err, &ll) || ll.Reason != ReasonExpired {
		t.Fatalf("Check past the deadline: %v", err)
	}
}

// TestARefusalPastTheDeadlineReadsExpired: the deadline is judged before the
// refusal.  A process paused while its write was in flight (its watchdog not
// yet run when it wakes) that reads StaleFencingToken for that write lost
// its lease to the pause: expired, as the watchdog would say a moment later,
// not superseded.  The pause is made by moving the lease's deadline past
// the slack and stopping its watchdog while the fake store holds the write.
func TestARefusalPastTheDeadlineReadsExpired(t *testing.T) {
	gwf := newFake(t, 5000)
	f := newFakeS3(t)
	l := lease(t, gwf, Options{})
	var seen []string
	l.OnLost(func(r string) { seen = append(seen, r) })
	c := s3For(f.URL, l.Attach)
	f.mu.Lock()
	f.status, f.body = 409, "<Error><Code>StaleFencingToken</Code><Message>no</Message></Error>"
	f.during = func() {
		l.mu.Lock()
		l.watchdog.Stop()
		l.deadline = time.Now().Add(-2 * time.Second) // past the slack of a 5 s lease
		l.mu.Unlock()
	}
	f.mu.Unlock()
	_, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bkt"),
		Key: aws.String("orders/x"), Body: bytes.NewReader([]byte("x"))})
	if _, ok := AsFencingError(err); !ok {
		t.Fatalf("not a fencing error: %v", err)
	}
	if l.Reason() != ReasonExpired || len(seen) != 1 || seen[0] != ReasonExpired {
		t.Fatalf("reason %q, OnLost saw %v; want expired", l.Reason(), seen)
	}
}

// TestARefusalOfTheLeasesTokenLosesIt: the fence refusing a write that
// carried the lease's own token is its judgment on the lease: lost (OnLost
// run) before the call returns, and the next write is refused unsent.  A
// refusal of a part (the lock only: the upload's epoch was judged) or a
// token never granted says nothing about the lease.
func TestARefusalOfTheLeasesTokenLosesIt(t *testing.T) {
	gwf := newFake(t, 5000)
	f := newFakeS3(t)
	ctx := context.Background()
	put := func(c *s3.Client) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"),
			Key: aws.String("orders/x"), Body: bytes.NewReader([]byte("x"))})
		return err
	}
	for _, tc := range []struct{ code, reason string }{
		{"StaleFencingToken", ReasonSuperseded},
		{"FencingLeaseExpired", ReasonExpired},
		{"FencingTokenNotGranted", ""},
	} {
		l := lease(t, gwf, Options{})
		var seen []string
		l.OnLost(func(r string) { seen = append(seen, r) })
		c := s3For(f.URL, l.Attach)
		f.mu.Lock()
		f.status, f.body, f.seen = 409, "<Error><Code>"+tc.code+"</Code><Message>no</Message></Error>", nil
		f.mu.Unlock()
		if _, ok := AsFencingError(put(c)); !ok {
			t.Fatalf("%s: not a fencing error", tc.code)
		}
		if tc.reason == "" {
			if l.Reason() != "" || len(seen) != 0 {
				t.Fatalf("%s: lost (%q)", tc.code, l.Reason())
			}
			continue
		}
		if l.Reason() != tc.reason || len(seen) != 1 || seen[0] != tc.reason {
			t.Fatalf("%s: reason %q, OnLost saw %v", tc.code, l.Reason(), seen)
		}
		var lost *LeaseLost
		if err := put(c); !errors.As(err, &lost) {
			t.Fatalf("%s: the next write: %v", tc.code, err)
		}
		f.mu.Lock()
		n := len(f.seen)
		f.mu.Unlock()
		if n != 1 {
			t.Fatalf("%s: sent %d times, want once", tc.code, n)
		}
	}
	l := lease(t, gwf, Options{})
	c := s3For(f.URL, l.Attach)
	f.mu.Lock()
	f.status, f.body = 409, "<Error><Code>StaleFencingToken</Code><Message>no</Message></Error>"
	f.mu.Unlock()
	_, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("orders/x"),
		UploadId: aws.String("u"), PartNumber: 1, Body: strings.NewReader("x")})
	if _, ok := AsFencingError(err); !ok || l.Reason() != "" {
		t.Fatalf("a part refused: %v, lease %q", err, l.Reason())
	}
}

// TestARefusalNamingTheLeaseLosesItWhateverTheRequestCarried: a part,
// UploadPartCopy, Complete or Abort carries the lock only and is claimed
// with the upload's epoch; a StaleFencingToken or FencingLeaseExpired whose
// document names the lease's lock and token is the gateway's judgment on the
// lease: lost before the call returns.  One naming another token (an older
// upload's epoch) or another lock says nothing about it.
func TestARefusalNamingTheLeaseLosesItWhateverTheRequestCarried(t *testing.T) {
	gwf := newFake(t, 5000)
	f := newFakeS3(t)
	ctx := context.Background()
	b, k, u := aws.String("bkt"), aws.String("orders/x"), aws.String("u")
	ops := map[string]func(*s3.Client) error{
		"UploadPart": func(c *s3.Client) error {
			_, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: u, PartNumber: 1,
				Body: strings.NewReader("x")})
			return err
		},
		"UploadPartCopy": func(c *s3.Client) error {
			_, err := c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: b, Key: k, UploadId: u,
				PartNumber: 1, CopySource: aws.String("bkt/orders/y")})
			return err
		},
		"CompleteMultipartUpload": func(c *s3.Client) error {
			_, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: u})
			return err
		},
		"AbortMultipartUpload": func(c *s3.Client) error {
			_, err := c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: b, Key: k, UploadId: u})
			return err
		},
	}
	for name, op := range ops {
		for _, tc := range []struct {
			code, lock, reason string
			tokenDelta         int64
		}{
			{"StaleFencingToken", "orders", ReasonSuperseded, 0},
			{"FencingLeaseExpired", "orders", ReasonExpired, 0},
			{"StaleFencingToken", "orders", "", -1}, // an older upload's epoch
			{"StaleFencingToken", "other", "", 0},
		} {
			l := lease(t, gwf, Options{})
			var seen []string
			l.OnLost(func(r string) { seen = append(seen, r) })
			c := s3For(f.URL, l.Attach)
			f.mu.Lock()
			f.status, f.seen = 409, nil
			f.body = "<Error><Code>" + tc.code + "</Code><Message>no</Message><Lock>" + tc.lock +
				"</Lock><Token>" + strconv.FormatInt(int64(l.Token())+tc.tokenDelta, 10) +
				"</Token><CurrentToken>99</CurrentToken></Error>"
			f.mu.Unlock()
			err := op(c)
			if fe, ok := AsFencingError(err); !ok || fe.Code != tc.code || fe.StatusCode != 409 {
				t.Fatalf("%s %s: %T %v", name, tc.code, err, err)
			}
			f.mu.Lock()
			sent := append([]string(nil), f.seen...)
			f.mu.Unlock()
			if len(sent) != 1 || !strings.HasSuffix(sent[0], " orders ") {
				t.Fatalf("%s: sent %q, want once with the lock only", name, sent)
			}
			if l.Reason() != tc.reason || len(seen) != map[bool]int{true: 1}[tc.reason != ""] ||
				(tc.reason != "" && seen[0] != tc.reason) {
				t.Fatalf("%s %s <Lock>%s</Lock> token%+d: reason %q, OnLost saw %v; want %q",
					name, tc.code, tc.lock, tc.tokenDelta, l.Reason(), seen, tc.reason)
			}
		}
	}
}

// stampAgo is the instant d ago on both clocks.
func stampAgo(d time.Duration) stamp {
	s := stampNow()
	s.t = s.t.Add(-d)
	s.boot -= d
	return s
}

// A worker resumed from a host suspend longer than its lease finds it lost
// before its next write: the boot-time clock counted the suspend, Go's
// monotonic clock did not.
func TestALeaseIsLostAfterAHostSuspend(t *testing.T) {
	f := newFake(t, 5000)
	l := lease(t, f, Options{})
	if err := l.Check(); err != nil {
		t.Fatalf("Check before the suspend: %v", err)
	}
	real := bootNow
	defer func() { bootNow = real }()
	bootNow = func() (time.Duration, bool) { // the machine slept a minute
		b, ok := real()
		return b + time.Minute, ok
	}
	if r := l.Remaining(); r != 0 {
		t.Fatalf("Remaining after the suspend: %v", r)
	}
	var ll *LeaseLost
	if err := l.Check(); !errors.As(err, &ll) || ll.Reason != ReasonExpired {
		t.Fatalf("Check after the suspend: %v", err)
	}
}

// The boot-time clock is read on Linux, and keeps pace with the monotonic one.
func TestTheBootClockKeepsPace(t *testing.T) {
	b0, ok := bootNow()
	if runtime.GOOS != "linux" {
		if ok {
			t.Fatal("a boot-time clock off Linux")
		}
		return
	}
	if !ok {
		t.Fatal("CLOCK_BOOTTIME unreadable")
	}
	m0 := time.Now()
	time.Sleep(50 * time.Millisecond)
	b1, _ := bootNow()
	if drift := (b1 - b0) - time.Since(m0); drift < -5*time.Millisecond || drift > 5*time.Millisecond {
		t.Fatalf("boot-time clock drifted %v from the monotonic clock in 50 ms", drift)
	}
}
