// A worker that holds the lock "orders" and writes its progress through the
// gateway every 200 ms.  Paused past its lease (a GC pause, SIGSTOP, a
// frozen container), it learns of the loss before its next write is sent, and
// starts over with a new lease.  SIGTERM or Ctrl-C stops it.
//
//	FENCEGATE_URL=http://127.0.0.1:9000 BUCKET=data S3_ACCESS_KEY=... S3_SECRET_KEY=... \
//	AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... ./worker
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"fencegate"
)

func getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	url := getenv("FENCEGATE_URL", "http://127.0.0.1:9000")
	lock, bucket := getenv("LOCK", "orders"), getenv("BUCKET", "data")
	leaseMs, _ := strconv.ParseInt(getenv("LEASE_MS", "15000"), 10, 64)

	// The JSON API is signed with SigV4 when there are keys (a gateway with
	// principals), and sent plain otherwise.
	var creds aws.CredentialsProvider
	if ak := os.Getenv("AWS_ACCESS_KEY_ID"); ak != "" {
		creds = credentials.NewStaticCredentialsProvider(ak, os.Getenv("AWS_SECRET_ACCESS_KEY"), "")
	}
	gw, err := fencegate.NewGateway(url, fencegate.Options{Credentials: creds})
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	client := s3.New(s3.Options{
		Region:           "us-east-1",
		EndpointResolver: s3.EndpointResolverFromURL(url),
		UsePathStyle:     true,
		Credentials: credentials.NewStaticCredentialsProvider(
			os.Getenv("S3_ACCESS_KEY"), os.Getenv("S3_SECRET_KEY"), ""),
	})

	for ctx.Err() == nil {
		// Returns once granted (or a *LockHeldError after WaitMs); from here
		// the lease renews itself until lost or released.
		lease, err := gw.Lease(ctx, lock, fencegate.LeaseOptions{LeaseMs: leaseMs, WaitMs: 2000})
		var held *fencegate.LockHeldError
		switch {
		case errors.As(err, &held):
			fmt.Printf("held by %s; trying again\n", held.Holder)
			continue
		case err != nil && ctx.Err() == nil:
			fmt.Printf("acquire: %v\n", err)
			time.Sleep(time.Second)
			continue
		case err != nil:
			continue
		}
		work(ctx, lease, client, bucket)
		_ = lease.Release() // at most one second; sends nothing once lost
	}
	fmt.Println("stopped")
}

// work writes under the lease until it is lost or the worker is stopped.
func work(ctx context.Context, lease *fencegate.Lease, client *s3.Client, bucket string) {
	for n := 1; ; n++ {
		// lease.Attach: this write carries the lock and the token, and is
		// not sent at all once the lease's local deadline has passed.
		_, err := client.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(lease.Lock() + "/progress"),
			Body: strings.NewReader(strconv.Itoa(n)),
		}, lease.Attach)
		var unknown *fencegate.WriteOutcomeUnknown
		if errors.As(err, &unknown) {
			// The lease was lost before a retry, after an earlier attempt
			// was sent: that write may have landed. Start over (a new
			// lease) and read back before trusting what is stored.
			fmt.Printf("outcome unknown: %v\n", unknown)
			return
		}
		var lost *fencegate.LeaseLost
		if errors.As(err, &lost) {
			// A pause or a partition outlived the lease: nothing was sent.
			fmt.Printf("lease lost: %s\n", lost.Reason)
			return
		}
		if refusal, ok := fencegate.AsFencingError(err); ok {
			// The gateway refused a write already on the wire (a newer
			// holder wrote first): it did not land.
			fmt.Printf("refused: %s\n", refusal.Code)
			return
		}
		if err != nil {
			fmt.Printf("write failed: %v\n", err)
			return
		}
		fmt.Printf("wrote %d with token %d\n", n, lease.Token())
		select {
		case <-ctx.Done():
			return
		case <-lease.Done():
			fmt.Printf("lease lost: %s\n", lease.Reason())
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}
