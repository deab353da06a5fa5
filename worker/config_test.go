package worker

import (
	"strings"
	"testing"

	"ticketd/ticket"
)

// TestDefaultHolderCarriesRelease: the holder of a lease names this
// release (ticket.HolderSuffix), which `ticketd upgrade finalize` reads
// from the lease table, and stays within the column's 255 bytes.
func TestDefaultHolderCarriesRelease(t *testing.T) {
	h := DefaultHolder()
	if !strings.HasSuffix(h, ticket.HolderSuffix()) || len(h) > 255 {
		t.Fatalf("DefaultHolder() = %q (%d bytes), want it to end with %q, at most 255 bytes", h, len(h), ticket.HolderSuffix())
	}
}
