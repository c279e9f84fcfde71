// A worker process for tests/integration/test_worker_go.py, built by
// `make go-client` into build/go/fencegate-test-worker against the library
// in clients/go.
//
//	fencegate-test-worker MODE CONFIG_JSON
//
// Every event is one JSON line appended to config["out"], with "t" on
// CLOCK_MONOTONIC (comparable with Python's time.monotonic()).  The JSON API
// is signed when AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY are set (a gateway
// with principals), plain otherwise.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"golang.org/x/sys/unix"

	"fencegate"
)

type config struct {
	APIURL   string `json:"api_url"`
	S3URL    string `json:"s3_url"`
	Bucket   string `json:"bucket"`
	S3AK     string `json:"s3_ak"`
	S3SK     string `json:"s3_sk"`
	RGWURL   string `json:"rgw_url"`
	RGWAK    string `json:"rgw_ak"`
	RGWSK    string `json:"rgw_sk"`
	LeaseMs  int64  `json:"lease_ms"`
	Out      string `json:"out"`
	Marker   string `json:"marker"`
	Go       string `json:"go"`
	Holder   string `json:"holder"`
	Duration int    `json:"durations"`
}

var (
	cfg   config
	out   *os.File
	outMu sync.Mutex
	bg    = context.Background()
)

func mono() float64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

func event(ev string, kv ...interface{}) {
	m := map[string]interface{}{"ev": ev, "t": mono(), "pid": os.Getpid()}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, _ := json.Marshal(m)
	outMu.Lock()
	defer outMu.Unlock()
	_, _ = out.Write(append(b, '\n'))
}

func fatal(err error) {
	event("crash", "error", err.Error())
	os.Exit(1)
}

func must(err error) {
	if err != nil {
		fatal(err)
	}
}

// sendingTransport marks the zombie's body as being sent (not hashed).
type sendingTransport struct{ onSend func(r *http.Request) }

func (t sendingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.onSend != nil {
		t.onSend(r)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func s3Client(url, ak, sk string, attempts int, onSend func(*http.Request), opts ...func(*s3.Options)) *s3.Client {
	return s3.New(s3.Options{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider(ak, sk, ""),
		EndpointResolver: s3.EndpointResolverFromURL(url),
		UsePathStyle:     true,
		HTTPClient:       &http.Client{Transport: sendingTransport{onSend}, Timeout: 60 * time.Second},
		Retryer:          retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = attempts }),
	}, opts...)
}

func s3c(opts ...func(*s3.Options)) *s3.Client {
	return s3Client(cfg.S3URL, cfg.S3AK, cfg.S3SK, 5, nil, opts...)
}

func envCreds() aws.CredentialsProvider {
	ak, sk := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if ak == "" {
		return nil
	}
	return credentials.NewStaticCredentialsProvider(ak, sk, "")
}

func gateway(url string) *fencegate.Gateway {
	gw, err := fencegate.NewGateway(url, fencegate.Options{Credentials: envCreds()})
	must(err)
	return gw
}

// outcome is ["ok", nil] or [error type, its code or reason].
func outcome(err error) []interface{} {
	if err == nil {
		return []interface{}{"ok", nil}
	}
	var unknown *fencegate.WriteOutcomeUnknown
	if errors.As(err, &unknown) { // before the APIError of the attempt it wraps
		return []interface{}{"WriteOutcomeUnknown", unknown.Reason}
	}
	var ll *fencegate.LeaseLost
	if errors.As(err, &ll) {
		return []interface{}{"LeaseLost", ll.Reason}
	}
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"StaleFencingToken", errors.As(err, new(*fencegate.StaleFencingToken))},
		{"FencingLeaseExpired", errors.As(err, new(*fencegate.FencingLeaseExpired))},
		{"FencingTokenNotGranted", errors.As(err, new(*fencegate.FencingTokenNotGranted))},
		{"MissingFencingToken", errors.As(err, new(*fencegate.MissingFencingToken))},
	} {
		if c.ok {
			var api smithy.APIError
			code := ""
			if errors.As(err, &api) { // the SDK's own error interface still works
				code = api.ErrorCode()
			}
			return []interface{}{c.name, code}
		}
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		return []interface{}{"APIError", api.ErrorCode()}
	}
	s := err.Error()
	if len(s) > 200 {
		s = s[:200]
	}
	return []interface{}{fmt.Sprintf("%T", err), s}
}

func put(c *s3.Client, key string, body []byte, opts ...func(*s3.Options)) error {
	_, err := c.PutObject(bg, &s3.PutObjectInput{Bucket: &cfg.Bucket, Key: aws.String(key),
		Body: bytes.NewReader(body)}, opts...)
	return err
}

func waitFile(path string) {
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// halfThenWait: once the transport is sending it (not the signer hashing
// it), stops at half way, says so in a marker file and waits for a go file.
type halfThenWait struct {
	data    []byte
	pos     int64
	sending bool
	mu      sync.Mutex
}

func (b *halfThenWait) Read(p []byte) (int, error) {
	b.mu.Lock()
	sending := b.sending
	b.mu.Unlock()
	if sending && b.pos >= int64(len(b.data)/2) {
		if _, err := os.Stat(cfg.Go); err != nil {
			must(os.WriteFile(cfg.Marker, nil, 0o644))
			waitFile(cfg.Go)
		}
	}
	if b.pos >= int64(len(b.data)) {
		return 0, io.EOF
	}
	n := copy(p[:minInt(len(p), 65536)], b.data[b.pos:])
	b.pos += int64(n)
	return n, nil
}

func (b *halfThenWait) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		b.pos = off
	case io.SeekCurrent:
		b.pos += off
	case io.SeekEnd:
		b.pos = int64(len(b.data)) + off
	}
	return b.pos, nil
}

func minInt(a, b int) int {
	if a < b {
		return a
	}
	return b
}

func zombie() {
	body := &halfThenWait{data: bytes.Repeat([]byte("Z"), 4<<20)}
	c := s3Client(cfg.S3URL, cfg.S3AK, cfg.S3SK, 5, func(r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/orders/inflight") {
			body.mu.Lock()
			body.sending = true
			body.mu.Unlock()
		}
	})
	lease, err := gateway(cfg.APIURL).Lease(bg, "orders", fencegate.LeaseOptions{LeaseMs: cfg.LeaseMs, WaitMs: 20000})
	must(err)
	fired := make(chan struct{}) // see unreachable: the callback may run after Done
	lease.OnLost(func(reason string) { event("lost", "reason", reason); close(fired) })
	event("granted", "token", lease.Token())
	must(put(c, "orders/obj", []byte("worker-a 1"), lease.Attach))
	event("wrote", "n", 1)
	var attempts []string
	_, err = c.PutObject(bg, &s3.PutObjectInput{Bucket: &cfg.Bucket, Key: aws.String("orders/inflight"),
		Body: body, ContentLength: int64(len(body.data))}, lease.Attach, recordAttempts(&attempts))
	event("inflight_done", "result", outcome(err), "lost", lease.Reason() != "", "reason", lease.Reason(),
		"attempts", attempts)
	if lease.Reason() != "" {
		awaitCallback(fired)
	}
	event("write2_attempt")
	event("write2_done", "result", outcome(put(c, "orders/obj", []byte("worker-a 2"), lease.Attach)))
}

// awaitCallback waits for an OnLost callback that closes fired, once the
// lease is lost.
func awaitCallback(fired <-chan struct{}) {
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		event("crash", "error", "OnLost's callback did not run within 5 s of the loss")
	}
}

// recordAttempts: a test middleware inside the retry loop that notes what
// each attempt the SDK sent came back with.
func recordAttempts(into *[]string) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("test.attempts", func(ctx context.Context,
				in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				*into = append(*into, fmt.Sprint(err))
				return out, md, err
			}), middleware.After)
		})
	}
}

func writer() {
	lease, err := gateway(cfg.APIURL).Lease(bg, "orders", fencegate.LeaseOptions{LeaseMs: cfg.LeaseMs, WaitMs: 30000})
	must(err)
	defer func() { _ = lease.Release() }()
	c := s3c(lease.Attach)
	event("granted", "token", lease.Token())
	must(put(c, "orders/obj", []byte("worker-b 1")))
	event("wrote", "n", 1)
}

func steady() {
	lease, err := gateway(cfg.APIURL).Lease(bg, "orders", fencegate.LeaseOptions{LeaseMs: cfg.LeaseMs, WaitMs: 20000})
	must(err)
	c := s3c(lease.Attach)
	event("granted", "token", lease.Token())
	end := time.Now().Add(time.Duration(int64(cfg.Duration)*cfg.LeaseMs) * time.Millisecond)
	n := 0
	for time.Now().Before(end) {
		n++
		if err := put(c, fmt.Sprintf("orders/s%d", n%4), []byte(strconv.Itoa(n))); err != nil {
			event("write_failed", "n", n, "result", outcome(err))
			break
		}
		time.Sleep(time.Duration(cfg.LeaseMs) * time.Millisecond / 5)
	}
	event("done", "writes", n, "lost", lease.Reason() != "", "reason", nilIfEmpty(lease.Reason()),
		"renewals", lease.Renewals())
	_ = lease.Release()
}

func nilIfEmpty(s string) interface{} {
	if s == "" {
		return nil
	}
	return s
}

func elect() {
	ctx, stop := signal.NotifyContext(bg, syscall.SIGTERM)
	defer stop()
	c := s3c()
	run := func(ctx context.Context, lease *fencegate.Lease) error {
		for n := 1; ctx.Err() == nil; n++ {
			err := put(c, "orders/leader", []byte(fmt.Sprintf("%s %d", cfg.Holder, n)), lease.Attach)
			event("beat", "token", lease.Token(), "result", outcome(err))
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(cfg.LeaseMs) * time.Millisecond / 4):
			}
		}
		event("run_returned", "token", lease.Token(), "reason", nilIfEmpty(lease.Reason()))
		return nil
	}
	event("campaigning")
	err := gateway(cfg.APIURL).Elect(ctx, "orders", run, fencegate.ElectOptions{
		Holder: cfg.Holder, LeaseMs: cfg.LeaseMs,
		OnStarted:   func(l *fencegate.Lease) { event("started", "token", l.Token()) },
		OnStopped:   func(l *fencegate.Lease) { event("stopped", "reason", l.Reason()) },
		OnNewLeader: func(h string, tok uint64) { event("new_leader", "holder", h, "token", tok) },
	})
	must(err)
	event("exit")
}

func watch() {
	ctx, stop := signal.NotifyContext(bg, syscall.SIGTERM)
	defer stop()
	for info := range gateway(cfg.APIURL).Watch(ctx, "orders") {
		event("seen", "token", info.Token, "holder", info.Holder, "live", info.Live)
	}
}

func unreachable() {
	c := s3c()
	lease, err := gateway(cfg.APIURL).Lease(bg, "orders", fencegate.LeaseOptions{LeaseMs: cfg.LeaseMs, WaitMs: 20000})
	must(err)
	event("granted", "token", lease.Token())
	// OnLost runs in the goroutine that noticed the loss, after Done is
	// closed, so this goroutine may see the loss first: wait for the
	// callback too, so that "lost" is written before the process ends.
	fired := make(chan struct{})
	lease.OnLost(func(reason string) { event("lost", "reason", reason); close(fired) })
	must(put(c, "orders/u", []byte("before"), lease.Attach))
	last := 0.0
	for lease.Reason() == "" {
		d := mono() + lease.Remaining().Seconds()
		d = float64(int64(d*1000+0.5)) / 1000
		if d != last && lease.Reason() == "" {
			event("deadline", "at", d)
			last = d
		}
		select {
		case <-lease.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	awaitCallback(fired)
	event("after_loss_attempt")
	event("after_loss", "result", outcome(put(c, "orders/u", []byte("after"), lease.Attach)))
}

// signedDo sends a request to the gateway, signed like the library does
// when there are keys.
func signedDo(method, url string, body []byte) (*http.Response, []byte) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	must(err)
	if creds := envCreds(); creds != nil {
		v, err := creds.Retrieve(bg)
		must(err)
		sum := sha256.Sum256(body)
		h := hex.EncodeToString(sum[:])
		req.Header.Set("X-Amz-Content-Sha256", h)
		must(v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).
			SignHTTP(bg, v, req, h, "s3", "us-east-1", time.Now()))
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	must(err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// refusalsTotal sums fencegate_fence_refusals_total over lock and code.
func refusalsTotal() int {
	_, b := signedDo("GET", cfg.S3URL+"/metrics", nil)
	text := string(b)
	if !strings.Contains(text, "# TYPE fencegate_fence_refusals_total counter") {
		fatal(errors.New("no fencegate_fence_refusals_total in /metrics"))
	}
	n := 0
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "fencegate_fence_refusals_total{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			n += int(v)
		}
	}
	return n
}

// releaseBehindItsBack: the gateway ends the lease; the library does not know yet.
func releaseBehindItsBack(l *fencegate.Lease) {
	body, _ := json.Marshal(map[string]interface{}{"token": l.Token(), "lease_id": l.ID()})
	resp, b := signedDo("POST", cfg.APIURL+"/_fencegate/v1/locks/orders/release", body)
	if resp.StatusCode != 200 {
		fatal(fmt.Errorf("release behind its back: %d %s", resp.StatusCode, b))
	}
}

// bumpToken: a test-only middleware that overwrites the attached token with
// one nobody granted (tokens come from the gateway).
func bumpToken(tok uint64) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Build.Add(middleware.BuildMiddlewareFunc("test.bump", func(ctx context.Context,
				in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
				in.Request.(*smithyhttp.Request).Header.Set("X-Fencing-Token", strconv.FormatUint(tok, 10))
				return next.HandleBuild(ctx, in)
			}), middleware.After)
		})
	}
}

func tokens() {
	gw := gateway(cfg.APIURL)
	b := cfg.Bucket
	lease, err := gw.Lease(bg, "orders", fencegate.LeaseOptions{LeaseMs: 30000, WaitMs: 20000})
	must(err)
	c := s3c(lease.Attach)
	event("granted", "token", lease.Token())
	steps := map[string]interface{}{}
	steps["put"] = outcome(put(c, "orders/p", []byte("p")))
	_, err = c.CopyObject(bg, &s3.CopyObjectInput{Bucket: &b, Key: aws.String("orders/c"),
		CopySource: aws.String(b + "/orders/p")})
	steps["copy"] = outcome(err)
	_, err = c.DeleteObject(bg, &s3.DeleteObjectInput{Bucket: &b, Key: aws.String("orders/c")})
	steps["delete"] = outcome(err)
	must(put(c, "orders/d1", []byte("1")))
	must(put(c, "orders/d2", []byte("2")))
	_, err = c.DeleteObjects(bg, &s3.DeleteObjectsInput{Bucket: &b, Delete: &types.Delete{
		Objects: []types.ObjectIdentifier{{Key: aws.String("orders/d1")}, {Key: aws.String("orders/d2")}}}})
	steps["delete_objects"] = outcome(err)
	big := make([]byte, 64<<20)
	_, _ = rand.Read(big)
	up := manager.NewUploader(c, func(u *manager.Uploader) {
		u.PartSize = 8 << 20
		u.Concurrency = 4
	})
	_, err = up.Upload(bg, &s3.PutObjectInput{Bucket: &b, Key: aws.String("orders/big"), Body: bytes.NewReader(big)})
	steps["multipart"] = outcome(err)
	event("writes", "steps", steps, "token", lease.Token())

	refusals := map[string]interface{}{}
	// fn's refusal, counted at the gateway, and what it did to l: ["held"]
	// or ["lost", reason, what the next write returned]
	refused := func(name string, fn func() error, l *fencegate.Lease) {
		before := refusalsTotal()
		res := outcome(fn())
		time.Sleep(100 * time.Millisecond)
		after := []interface{}{"held"}
		if l.Reason() != "" {
			after = []interface{}{"lost", l.Reason(), outcome(fn())[0]}
		}
		refusals[name] = map[string]interface{}{"result": res, "counted": refusalsTotal() - before,
			"lease": after}
	}
	releaseBehindItsBack(lease)
	newer, err := gw.Lease(bg, "orders", fencegate.LeaseOptions{LeaseMs: 30000, WaitMs: 20000})
	must(err)
	c2 := s3c(newer.Attach)
	must(put(c2, "orders/newer", []byte("n")))
	refused("StaleFencingToken", func() error { return put(c, "orders/p", []byte("old")) }, lease)

	releaseBehindItsBack(newer)
	refused("FencingLeaseExpired", func() error { return put(c2, "orders/p", []byte("x")) }, newer)

	third, err := gw.Lease(bg, "orders", fencegate.LeaseOptions{LeaseMs: 30000, WaitMs: 20000})
	must(err)
	c3 := s3c(third.Attach)
	refused("FencingTokenNotGranted", func() error {
		return put(c3, "orders/p", []byte("x"), bumpToken(third.Token()+100))
	}, third)

	rgw := s3Client(cfg.RGWURL, cfg.RGWAK, cfg.RGWSK, 1, nil)
	cmu, err := rgw.CreateMultipartUpload(bg, &s3.CreateMultipartUploadInput{Bucket: &b, Key: aws.String("orders/unseen")})
	must(err)
	refused("MissingFencingToken", func() error {
		_, err := c3.UploadPart(bg, &s3.UploadPartInput{Bucket: &b, Key: aws.String("orders/unseen"),
			UploadId: cmu.UploadId, PartNumber: 1, Body: bytes.NewReader([]byte("x"))})
		return err
	}, third)
	_, _ = rgw.AbortMultipartUpload(bg, &s3.AbortMultipartUploadInput{Bucket: &b, Key: aws.String("orders/unseen"),
		UploadId: cmu.UploadId})
	event("refusals", "refusals", refusals)
	for _, l := range []*fencegate.Lease{lease, newer, third} {
		_ = l.Release()
	}
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: fencegate-test-worker MODE CONFIG_JSON")
		os.Exit(2)
	}
	if err := json.Unmarshal([]byte(os.Args[2]), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var err error
	out, err = os.OpenFile(cfg.Out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	modes := map[string]func(){"zombie": zombie, "writer": writer, "steady": steady, "elect": elect,
		"watch": watch, "unreachable": unreachable, "tokens": tokens}
	fn, ok := modes[os.Args[1]]
	if !ok {
		fatal(fmt.Errorf("unknown mode %q", os.Args[1]))
	}
	event("start", "mode", os.Args[1])
	fn()
	event("end")
}
