package h2conn

import (
	"context"

	"github.com/supervisor-dev/supervisor/internal/budget"
)

// Budget is what a Wire charges the messages in assembly to: the
// body-side half of grpcfront.Budget (see there).
type Budget interface {
	ReserveBody(n int64) (*budget.Charge, error)
	WaitBody(ctx context.Context, n int64, gone func() error) (*budget.Charge, error)
}
