package pollctx

import (
	"context"
	"testing"
)

func TestCancelsAtItsPoll(t *testing.T) {
	ctx := New(3)
	for i, want := range []error{nil, nil, context.Canceled, context.Canceled} {
		if err := ctx.Err(); err != want {
			t.Fatalf("poll %d: %v, want %v", i+1, err, want)
		}
	}
	select {
	case <-ctx.Done():
	default:
		t.Fatal("Done is not closed once canceled")
	}
	if ctx.Polls() != 5 {
		t.Errorf("%d polls, want 5", ctx.Polls())
	}
	never := New(0)
	for range 10 {
		if never.Err() != nil {
			t.Fatal("New(0) canceled")
		}
	}
}
