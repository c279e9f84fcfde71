module fencegate

go 1.19

// Built in GOPATH mode against Debian 12's golang-github-aws-aws-sdk-go-v2-dev
// (1.17.1) and golang-github-aws-smithy-go-dev: see README.md.  In module
// mode, `go mod tidy` adds github.com/aws/aws-sdk-go-v2 (and service/s3,
// smithy-go) requirements.
