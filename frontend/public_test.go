package frontend

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ticketd/publicid"
)

const testKeyHex = "6b3f0c1e2d4a5968778695a4b3c2d1e0f00f1e2d3c4b5a69788796a5b4c3d2e1"

func testRing(t testing.TB, hexes ...string) *publicid.Ring {
	t.Helper()
	var keys [][]byte
	for _, h := range hexes {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, b)
	}
	r, err := publicid.NewRing(keys...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// publicConfig has keys, and IDs from a deployment that started an hour ago.
func publicConfig(t testing.TB, hexes ...string) Config {
	cfg := testConfig()
	cfg.IDKeys = publicid.NewStore(testRing(t, hexes...))
	cfg.FallbackCeiling, _ = cfg.Layout.MinIDAt(time.Now().Add(-time.Hour).UnixMilli())
	return cfg
}

// realIDs is a fakeIDs whose IDs are snowflake IDs of now.
func realIDs(t testing.TB) *fakeIDs {
	ids := newFakeIDs()
	ids.last = idAhead(t, 0)
	return ids
}

// TestWithPublic: with=public hands out each ID with its public form, in
// every format, single and batched; the forms are the ring's.
func TestWithPublic(t *testing.T) {
	h := start(t, publicConfig(t, testKeyHex), realIDs(t), nil)
	ring := testRing(t, testKeyHex)
	check := func(uri string, id, pub int64) {
		t.Helper()
		want, err := ring.Public(id)
		if err != nil || pub != want || pub == id {
			t.Errorf("%s: ID %d came with form %d, want %d", uri, id, pub, want)
		}
	}
	r := h.get(t, "/v1/id?with=public")
	var id, pub int64
	if _, err := fmt.Sscanf(r.body, "%d %d\n", &id, &pub); err != nil || r.status != 200 {
		t.Fatalf("text: got %d %q (%v)", r.status, r.body, err)
	}
	check("text", id, pub)
	r = h.get(t, "/v1/id?with=public&format=json")
	var j struct{ ID, Public string }
	r.json(t, &j)
	id, _ = strconv.ParseInt(j.ID, 10, 64)
	pub, _ = strconv.ParseInt(j.Public, 10, 64)
	check("json", id, pub)
	r = h.get(t, "/v1/id?with=public&format=binary")
	if len(r.body) != 16 {
		t.Fatalf("binary: %d bytes, want 16", len(r.body))
	}
	check("binary", int64(binary.BigEndian.Uint64([]byte(r.body))), int64(binary.BigEndian.Uint64([]byte(r.body[8:]))))

	r = h.get(t, "/v1/ids?n=3&with=public")
	lines := strings.Split(strings.TrimSpace(r.body), "\n")
	if r.status != 200 || len(lines) != 3 {
		t.Fatalf("batch text: got %d %q", r.status, r.body)
	}
	for _, l := range lines {
		fmt.Sscanf(l, "%d %d", &id, &pub)
		check("batch text", id, pub)
	}
	r = h.get(t, "/v1/ids?n=2&with=public&format=json")
	var jb struct{ IDs, Public []string }
	r.json(t, &jb)
	if len(jb.IDs) != 2 || len(jb.Public) != 2 {
		t.Fatalf("batch json: %q", r.body)
	}
	for i := range jb.IDs {
		id, _ = strconv.ParseInt(jb.IDs[i], 10, 64)
		pub, _ = strconv.ParseInt(jb.Public[i], 10, 64)
		check("batch json", id, pub)
	}
	r = h.get(t, "/v1/ids?n=2&with=public&format=binary")
	if len(r.body) != 32 {
		t.Fatalf("batch binary: %d bytes, want 32", len(r.body))
	}
	for b := []byte(r.body); len(b) > 0; b = b[16:] {
		check("batch binary", int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:])))
	}
}

// TestDecodePublic: /v1/ids/{id} shows the public form; from=public turns
// it back; a form made under the older key of the ring decodes through it;
// a form of no ID of this deployment is a 400.
func TestDecodePublic(t *testing.T) {
	const oldKey = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	h := start(t, publicConfig(t, testKeyHex, oldKey), realIDs(t), nil)
	id := idAhead(t, -time.Minute)
	r := h.get(t, "/v1/ids/"+strconv.FormatInt(id, 10))
	var d struct {
		ID, Public string
		Worker     int
	}
	r.json(t, &d)
	want, _ := testRing(t, testKeyHex).Public(id)
	if r.status != 200 || d.ID != strconv.FormatInt(id, 10) || d.Public != strconv.FormatInt(want, 10) || d.Worker != 9 {
		t.Fatalf("decode: got %d %s, want the ID's fields and public %d", r.status, r.body, want)
	}
	var back struct {
		Public, ID string
		Key        int
		Also       []struct{ ID string }
	}
	r = h.get(t, "/v1/ids/"+d.Public+"?from=public")
	r.json(t, &back)
	if r.status != 200 || back.ID != d.ID || back.Key != 0 || back.Public != d.Public || back.Also == nil {
		t.Fatalf("from=public: got %d %s, want ID %s under key 0", r.status, r.body, d.ID)
	}
	oldForm, _ := testRing(t, oldKey).Public(id)
	r = h.get(t, fmt.Sprintf("/v1/ids/%d?from=public", oldForm))
	r.json(t, &back)
	found := back.ID == d.ID && back.Key == 1
	for _, a := range back.Also {
		found = found || a.ID == d.ID
	}
	if r.status != 200 || !found {
		t.Fatalf("a form of the older key: got %d %s, want ID %s", r.status, r.body, d.ID)
	}
	// A form whose ID under every key lies outside the deployment: the form
	// of an ID from before its first start.
	early := testRing(t, testKeyHex)
	for _, old := range []int64{1000, idAhead(t, -2*time.Hour)} {
		f, _ := early.Public(old)
		r = h.get(t, fmt.Sprintf("/v1/ids/%d?from=public", f))
		if r.status == 200 {
			var got struct{ ID string }
			r.json(t, &got)
			if got.ID == strconv.FormatInt(old, 10) {
				t.Errorf("the form of %d, an ID before the deployment, decoded", old)
			}
			continue
		}
		if r.status != 400 || !strings.Contains(r.errorMessage(t), "no ID of this deployment") {
			t.Errorf("form of %d: got %d %s, want 400", old, r.status, r.body)
		}
	}
	for _, bad := range []string{"0", "x", "-1", "9223372036854775808"} {
		if r = h.get(t, "/v1/ids/"+bad+"?from=public"); r.status != 400 {
			t.Errorf("form %q: got %d, want 400", bad, r.status)
		}
	}
	if r = h.get(t, "/v1/ids/5?from=private"); r.status != 400 {
		t.Errorf("from=private: got %d, want 400", r.status)
	}
}

// TestPublicOff: without keys, public forms are a 400 naming the flag, and
// /v1/ids/{id} has no public field.
func TestPublicOff(t *testing.T) {
	h := start(t, testConfig(), nil, nil)
	for _, uri := range []string{"/v1/id?with=public", "/v1/ids?n=2&with=public", "/v1/ids/5?from=public"} {
		r := h.get(t, uri)
		if r.status != 400 || !strings.Contains(r.errorMessage(t), "-id-key-file") {
			t.Errorf("%s: got %d %s, want 400 naming -id-key-file", uri, r.status, r.body)
		}
	}
	if r := h.get(t, "/v1/ids/1957262335440691200"); strings.Contains(r.body, "public") {
		t.Errorf("decode without keys: %s", r.body)
	}
	if r := h.get(t, "/v1/id?with=private"); r.status != 400 {
		t.Errorf("with=private: got %d", r.status)
	}
}

// TestPublicAllocs: /v1/id?with=public allocates nothing.
func TestPublicAllocs(t *testing.T) {
	s, err := New(publicConfig(t, testKeyHex), realIDs(t), newFakeTickets())
	if err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"/v1/id?with=public", "/v1/id?with=public&format=json"} {
		if got := allocsPerRequest(t, s.Handler(), newRequestCtx(uri)); got != 0 && !raceEnabled {
			t.Errorf("%s: %v allocations per request, want 0", uri, got)
		}
	}
}

// lockedBuf collects log lines.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestKeyNeverShown: the key (or a piece of it) appears in no answer of
// /v1/status or /metrics and in no log line, whatever was asked.
func TestKeyNeverShown(t *testing.T) {
	cfg := publicConfig(t, testKeyHex)
	logs := &lockedBuf{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := start(t, cfg, realIDs(t), nil)
	var seen strings.Builder
	for _, uri := range []string{"/v1/status", "/metrics", "/v1/id?with=public", "/v1/ids/1?from=public", "/v1/ids/x?from=public", "/v1/id?with=x"} {
		r := h.get(t, uri)
		seen.WriteString(r.body)
	}
	h.ids.set(func(f *fakeIDs) { f.panics = true })
	seen.WriteString(h.get(t, "/v1/id?with=public").body) // a panic is logged with its stack
	logs.mu.Lock()
	seen.WriteString(logs.b.String())
	logs.mu.Unlock()
	out := strings.ToLower(seen.String())
	for i := 0; i+8 <= len(testKeyHex); i += 8 {
		if strings.Contains(out, testKeyHex[i:i+8]) {
			t.Errorf("a piece of the key (%s…) appears in status, metrics or the log", testKeyHex[i:i+8])
		}
	}
	if !strings.Contains(out, "ticketd_requests_total") || !strings.Contains(out, "panic") {
		t.Errorf("the test did not see /metrics and the log: %.200s", out)
	}
}
