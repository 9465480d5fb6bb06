package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"watchdog/store"
)

// unsent is an error pgconn reports before anything reached the server.
type unsent struct{}

func (unsent) Error() string     { return "write failed before sending" }
func (unsent) SafeToRetry() bool { return true }

// TestCommitFailed: a COMMIT whose answer was lost leaves the write's
// outcome unknown; one never sent, or refused by the server with an
// ERROR (it rolled back), wrote nothing.
func TestCommitFailed(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want store.Failure
	}{
		{"never sent", unsent{}, store.FailureNotWritten},
		{"connection closed after COMMIT was sent", io.ErrUnexpectedEOF, store.FailureOutcomeUnknown},
		{"connection reset while waiting for the answer", fmt.Errorf("read: %w", syscall.ECONNRESET), store.FailureOutcomeUnknown},
		{"FATAL terminating connection (may follow a commit)", &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01"}, store.FailureOutcomeUnknown},
		{"ERROR from the server: rolled back, out of disk", &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "53100"}, store.FailureNotWritten},
		{"ERROR from the server: rolled back, a constraint", &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "23505"}, store.FailureFault},
		{"the transaction had already failed", pgx.ErrTxCommitRollback, store.FailureFault},
		{"the caller's deadline while waiting", context.DeadlineExceeded, store.FailureOutcomeUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := commitFailed(tt.err)
			if got := store.Classify(err); got != tt.want {
				t.Errorf("commitFailed(%v) = %v: %s, want %s", tt.err, err, got, tt.want)
			}
		})
	}
}

// TestClassifyConnectionLost: a read or a write before its COMMIT that
// failed with the connection wrote nothing: "not written", the API's 503.
func TestClassifyConnectionLost(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want store.Failure
	}{
		{"terminated backend", &pgconn.PgError{Severity: "FATAL", Code: "57P01"}, store.FailureNotWritten},
		{"unexpected EOF", fmt.Errorf("read entity: %w", io.ErrUnexpectedEOF), store.FailureNotWritten},
		{"connection reset", fmt.Errorf("read entity: %w", syscall.ECONNRESET), store.FailureNotWritten},
		{"broken pipe", fmt.Errorf("begin: %w", syscall.EPIPE), store.FailureNotWritten},
		{"a statement's own error", &pgconn.PgError{Severity: "ERROR", Code: "22P02"}, store.FailureFault},
		{"cancelled by the caller", context.Canceled, store.FailureFault},
		{"anything else", errors.New("boom"), store.FailureFault},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := store.Classify(classify(tt.err)); got != tt.want {
				t.Errorf("classify(%v): %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}
