// Package fencegate is the worker library for a fencegate gateway, on the AWS
// SDK for Go v2: leases renewed in the background and judged on the local
// monotonic clock, the fencing token on every write of an S3 client, typed
// fencing refusals, and leader election.  See the fencegate README, section
// "Worker libraries".
package fencegate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

const (
	apiPrefix = "/_fencegate/v1/locks"
	// One acquire or watch long poll lasts at most this long.
	waitSlice = 30 * time.Second
	// Added to a long poll's wait for its answer to come back.
	reqExtra = 10 * time.Second
	// ReleaseTimeout bounds Release.
	ReleaseTimeout = time.Second
)

// Options for NewGateway.  All are optional.
type Options struct {
	// Credentials sign the JSON API with SigV4 (service s3), as a gateway
	// with principals requires.  Nil: plain requests.
	Credentials aws.CredentialsProvider
	// Region of the SigV4 scope (the gateway ignores it); "us-east-1".
	Region string
	// HTTPClient for the JSON API; a client with no overall timeout (each
	// call has its own deadline) by default.
	HTTPClient *http.Client
}

// Gateway is a client of the gateway's JSON API (README "The election API").
// Safe for concurrent use.
type Gateway struct {
	base   *url.URL
	creds  aws.CredentialsProvider
	region string
	signer *v4.Signer
	hc     *http.Client
}

// NewGateway returns a client of the gateway at rawURL ("http://host:port").
func NewGateway(rawURL string, opts Options) (*Gateway, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("fencegate: gateway url %q: want http(s)://host[:port]", rawURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	g := &Gateway{base: u, creds: opts.Credentials, region: opts.Region, hc: opts.HTTPClient}
	if g.region == "" {
		g.region = "us-east-1"
	}
	if g.hc == nil {
		g.hc = &http.Client{}
	}
	if g.creds != nil {
		g.signer = v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	}
	return g, nil
}

// URL is the gateway's address, as given.
func (g *Gateway) URL() string { return g.base.String() }

// apiReply is one JSON API answer: its status and its JSON document.
type apiReply struct {
	status int
	doc    map[string]interface{}
	raw    string
}

func (r *apiReply) str(k string) string {
	s, _ := r.doc[k].(string)
	return s
}

func (r *apiReply) num(k string) int64 {
	f, _ := r.doc[k].(float64)
	return int64(f)
}

// call makes one JSON API request that must answer within timeout.  Any HTTP
// answer comes back as an apiReply; no answer is a *GatewayError (Status 0).
func (g *Gateway) call(ctx context.Context, method, path string, query url.Values,
	body interface{}, timeout time.Duration) (*apiReply, error) {
	op := method + " " + path
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return nil, &GatewayError{Op: op, Err: err}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := *g.base
	u.Path = g.base.Path + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(payload))
	if err != nil {
		return nil, &GatewayError{Op: op, Err: err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if g.signer != nil {
		creds, err := g.creds.Retrieve(ctx)
		if err != nil {
			return nil, &GatewayError{Op: op, Err: fmt.Errorf("credentials: %w", err)}
		}
		sum := sha256.Sum256(payload)
		hash := hex.EncodeToString(sum[:])
		req.Header.Set("X-Amz-Content-Sha256", hash)
		if err := g.signer.SignHTTP(ctx, creds, req, hash, "s3", g.region, time.Now()); err != nil {
			return nil, &GatewayError{Op: op, Err: err}
		}
	}
	resp, err := g.hc.Do(req)
	if err != nil {
		return nil, &GatewayError{Op: op, Err: err}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, &GatewayError{Op: op, Err: err}
	}
	r := &apiReply{status: resp.StatusCode, raw: string(raw)}
	if json.Unmarshal(raw, &r.doc) != nil {
		r.doc = map[string]interface{}{}
	}
	return r, nil
}

func lockPath(lock, verb string) string {
	p := apiPrefix + "/" + url.PathEscape(lock)
	if verb != "" {
		p += "/" + verb
	}
	return p
}

// LockInfo is the lock's record as GET .../locks/{lock} returns it.
type LockInfo struct {
	Lock     string `json:"lock"`
	Token    uint64 `json:"token"`
	Holder   string `json:"holder"`
	Live     bool   `json:"live"`
	Released bool   `json:"released"`
}

// Get returns the lock's record; with after > 0 it long-polls (up to wait)
// until the lock's epoch passes after or its record changes.
func (g *Gateway) Get(ctx context.Context, lock string, after uint64, wait time.Duration) (*LockInfo, error) {
	q := url.Values{}
	if after > 0 {
		q.Set("after", strconv.FormatUint(after, 10))
		q.Set("wait_ms", strconv.FormatInt(wait.Milliseconds(), 10))
	} else {
		wait = 0
	}
	r, err := g.call(ctx, "GET", lockPath(lock, ""), q, nil, wait+reqExtra)
	if err != nil {
		return nil, err
	}
	if r.status != 200 {
		return nil, &GatewayError{Op: "get " + lock, Status: r.status, Body: r.raw}
	}
	var info LockInfo
	if err := json.Unmarshal([]byte(r.raw), &info); err != nil {
		return nil, &GatewayError{Op: "get " + lock, Status: r.status, Body: r.raw, Err: err}
	}
	return &info, nil
}

// Watch sends the lock's record on the returned channel each time its
// holder, token or liveness changes (the API's long poll), until ctx ends
// or the gateway refuses the watch (403, 404); then the channel is closed.
// Transient failures (transport, 5xx, 429) are retried with a backoff.
func (g *Gateway) Watch(ctx context.Context, lock string) <-chan LockInfo {
	ch := make(chan LockInfo)
	go func() {
		defer close(ch)
		var after uint64
		last := ""
		failures := 0
		for ctx.Err() == nil {
			t0 := time.Now()
			info, err := g.Get(ctx, lock, after, waitSlice)
			if err != nil {
				ge, ok := err.(*GatewayError)
				if ok && !ge.transient() {
					return
				}
				sleepCtx(ctx, backoff(failures, time.Second))
				failures++
				continue
			}
			failures = 0
			key := fmt.Sprintf("%d/%s/%t/%t", info.Token, info.Holder, info.Live, info.Released)
			after = info.Token
			if key != last {
				last = key
				select {
				case ch <- *info:
				case <-ctx.Done():
					return
				}
			} else if d := time.Since(t0); d < time.Second {
				sleepCtx(ctx, time.Second-d) // an idle answer: at most one poll a second
			}
		}
	}()
	return ch
}

func backoff(failures int, unit time.Duration) time.Duration {
	d := unit << uint(failures)
	if failures > 5 || d > 5*time.Second {
		d = 5 * time.Second
	}
	return d
}

// sleepCtx sleeps d, or less when ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

func defaultHolder() string {
	h, _ := os.Hostname()
	if h == "" {
		h = "worker"
	}
	return fmt.Sprintf("%s-%d", h, os.Getpid())
}
