package auth_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"ticketd/auth"
)

// A tokens file with a quota, and what a server asks per request.
func ExampleParse() {
	file := `
# NAME    TOKEN                                                              SCOPES              QUOTAS
orders    3b5d3c7d207e37dceeedd301e35e2e58a4d0ac9ca0bdec0c1f30c3c5e3e8b3a1   ids,tickets:orders  ids=1000/s
`
	set, err := auth.Parse([]byte(file), auth.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	tok, err := set.Authenticate([]byte("Bearer 3b5d3c7d207e37dceeedd301e35e2e58a4d0ac9ca0bdec0c1f30c3c5e3e8b3a1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tok.Name, tok.Allows(auth.ScopeIDs), tok.AllowsTickets("orders"), tok.AllowsTickets("users"))
	ok, _ := tok.TakeIDs(1000) // a burst of one second's worth
	fmt.Println(ok)
	ok, retryAfter := tok.TakeIDs(1)
	fmt.Println(ok, retryAfter > 0)

	_, err = set.Authenticate([]byte("Bearer 0000000000000000000000000000000000000000"))
	fmt.Println(err, auth.Challenge(err))
	// Output:
	// orders true true false
	// true
	// false true
	// auth: unknown bearer token Bearer realm="ticketd", error="invalid_token"
}

// Errors name the line and never quote the token.
func ExampleParse_errors() {
	file := "orders 3b5d3c7d207e37dceeedd301e35e2e58a4d0ac9ca0bdec0c1f30c3c5e3e8b3a1 idz\n" +
		"users short ids\n"
	_, err := auth.Parse([]byte(file), auth.Config{})
	fmt.Println(errors.Is(err, auth.ErrBadFile))
	fmt.Println(err)
	// Output:
	// true
	// auth: tokens file: line 1: unknown scope "idz": scopes are ids, tickets:*, tickets:NAME, status, metrics; line 2: token shorter than 32 characters: generate one with openssl rand -hex 32
}

// A Store reloads its file (on SIGHUP, say); a broken file keeps the tokens
// in use.
func ExampleStore_Reload() {
	dir, _ := os.MkdirTemp("", "tokens")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "tokens")
	const token = "3b5d3c7d207e37dceeedd301e35e2e58a4d0ac9ca0bdec0c1f30c3c5e3e8b3a1"
	os.WriteFile(path, []byte("monitor "+token+" metrics\n"), 0o600)

	store, err := auth.Open(path, auth.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	os.WriteFile(path, []byte("monitor "+token+" metrics,stauts\n"), 0o600)
	if _, err := store.Reload(); err != nil {
		fmt.Println("reload refused:", errors.Is(err, auth.ErrBadFile))
	}
	tok, err := store.Authenticate([]byte("Bearer " + token))
	fmt.Println(tok, err, tok.Allows(auth.ScopeMetrics))
	// Output:
	// reload refused: true
	// monitor <nil> true
}
