package refusal

import (
	"errors"
	"fmt"
	"testing"
)

func TestIsSeesARefusalThroughWrapping(t *testing.T) {
	r := New("--target %q: want sandbox or live", "prod")
	if r.Error() != `--target "prod": want sandbox or live` {
		t.Fatalf("message %q", r.Error())
	}
	if !Is(fmt.Errorf("list: %w", r)) {
		t.Error("a wrapped refusal is not seen")
	}
	if Is(errors.New("read manifest: permission denied")) || Is(nil) {
		t.Error("an ordinary error is taken for a refusal")
	}
}

func TestInterruptionIsNotARefusal(t *testing.T) {
	i := Interrupted("killed the %s", "runs")
	if i.Error() != "killed the runs" || !IsInterrupted(fmt.Errorf("rehearse: %w", i)) {
		t.Fatalf("interruption %q not seen through wrapping", i)
	}
	if Is(i) || IsInterrupted(New("refused")) || IsInterrupted(nil) {
		t.Error("a refusal and an interruption are taken for each other")
	}
}
