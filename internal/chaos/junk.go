package chaos

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// junkResult is what the junk step saw. Every answer must be 2xx, 3xx, 4xx or
// 503 (not ready / no ticket server in time); any other 5xx is a fault, and so
// is an instance that is not ready afterwards. A connection the server closed
// without answering (what fasthttp does to some unreadable requests) is fine.
type junkResult struct {
	mu         sync.Mutex
	requests   int
	classes    map[string]int // "2xx", "4xx", "503", "5xx", "closed", "timeout"
	bad        []string       // 5xx answers other than 503
	unanswered []string       // requests that got no answer (closed or timed out)
	ids        []int64        // IDs that junk requests happened to get
}

func (j *junkResult) note(what string, resp response, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.requests++
	switch {
	case err != nil:
		kind := "closed"
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			kind = "timeout"
		}
		j.classes[kind]++
		if len(j.unanswered) < 10 {
			j.unanswered = append(j.unanswered, fmt.Sprintf("%.60q: %s", what, kind))
		}
		return
	case resp.status == 503:
		j.classes["503"]++
	case resp.status >= 500:
		j.classes["5xx"]++
		if len(j.bad) < 10 {
			j.bad = append(j.bad, fmt.Sprintf("%s: %d %.200s", what, resp.status, resp.body))
		}
	default:
		j.classes[fmt.Sprintf("%dxx", resp.status/100)]++
	}
	// An issuing answer to a junk request is still an ID handed out: keep it.
	if resp.status == 200 && resp.idSource != "" {
		for _, m := range quotedNumber.FindAllSubmatch(resp.body, -1) {
			if v, err := strconv.ParseInt(string(m[1]), 10, 64); err == nil {
				j.ids = append(j.ids, v)
			}
		}
		if resp.body != nil && resp.body[0] != '{' {
			j.ids, _ = parseInts(j.ids, resp.body)
		}
	}
}

var quotedNumber = regexp.MustCompile(`"([0-9]+)"`)

// junkPlan bounds the junk step.
type junkPlan struct {
	randomRequests int           // random method/path/query requests
	slow           time.Duration // how long each slow client dribbles
	beyondTimeout  bool          // also one slow client past ticketd's 5 s ReadTimeout
}

// junk throws malformed and hostile traffic at the server at addr while its
// load runs: malformed request lines, oversized headers, slow clients, random
// paths and queries. Bounded in count and in time.
func junk(addr string, plan junkPlan, rng *rand.Rand) *junkResult {
	j := &junkResult{classes: map[string]int{}}
	var wg sync.WaitGroup

	// Malformed and oversized requests, each on its own connection.
	// Each waits past ticketd's 5 s ReadTimeout, so that a request the server
	// keeps waiting on ends with its answer (408) or a close, not ours.
	for _, p := range junkPayloads(rng) {
		wg.Go(func() {
			resps, err := exchange(addr, []byte(p.raw), 1, p.head, time.Now().Add(7*time.Second))
			if len(resps) > 0 {
				j.note(p.name, resps[0], nil)
			} else {
				j.note(p.name, response{}, err)
			}
		})
	}
	wg.Go(func() {
		// 50 requests pipelined in one write: 50 answers, in order.
		const n = 50
		raw := strings.Repeat("GET /v1/id HTTP/1.1\r\nHost: chaos\r\n\r\n", n)
		resps, err := exchange(addr, []byte(raw), n, false, time.Now().Add(5*time.Second))
		for _, resp := range resps {
			j.note("pipelined /v1/id", resp, nil)
		}
		if len(resps) < n {
			j.note("pipelined /v1/id", response{}, err)
		}
	})

	// Random methods, paths and queries over keep-alive connections.
	per := plan.randomRequests / 4
	for w := range 4 {
		seed := rng.Uint64()
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			for range per {
				method := junkMethod(rng)
				raw := method + " " + junkPath(rng) + " HTTP/1.1\r\nHost: chaos\r\n\r\n"
				resps, err := exchange(addr, []byte(raw), 1, method == "HEAD", time.Now().Add(3*time.Second))
				if len(resps) > 0 {
					j.note(raw, resps[0], nil)
				} else {
					j.note(raw, response{}, err)
				}
			}
		})
	}

	// Slow clients: a header a byte at a time, then the end of the request;
	// and connections that say nothing at all.
	slow := func(d time.Duration) {
		end := time.Now().Add(d)
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			j.note("slow client", response{}, err)
			return
		}
		defer c.Close()
		_ = c.SetDeadline(end.Add(8 * time.Second))
		if _, err := c.Write([]byte("GET /v1/id HTTP/1.1\r\nHost: chaos\r\nX-Slow: ")); err != nil {
			j.note("slow client", response{}, err)
			return
		}
		for time.Now().Before(end) {
			if _, err := c.Write([]byte("a")); err != nil {
				j.note("slow client", response{}, err)
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
		if _, err := c.Write([]byte("\r\n\r\n")); err != nil {
			j.note("slow client", response{}, err)
			return
		}
		resp, _, err := readResponse(bufio.NewReader(c), nil, false)
		j.note(fmt.Sprintf("slow client (%s)", d), resp, err)
	}
	for range 3 {
		wg.Go(func() { slow(plan.slow) })
	}
	if plan.beyondTimeout {
		wg.Go(func() { slow(7 * time.Second) })
	}
	for range 2 {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				j.note("silent client", response{}, err)
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(plan.slow))
			resp, _, err := readResponse(bufio.NewReader(c), nil, false)
			if err == nil {
				j.note("silent client", resp, nil)
			}
		})
	}
	wg.Wait()
	return j
}

// exchange writes raw on a new connection and reads up to n answers.
func exchange(addr string, raw []byte, n int, head bool, deadline time.Time) ([]response, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(deadline)
	// Written in one go; an error here (the server closed early) is judged
	// by what could be read.
	_, _ = c.Write(raw)
	br := bufio.NewReaderSize(c, 64<<10)
	var out []response
	for range n {
		resp, body, err := readResponse(br, nil, head)
		if err != nil {
			return out, err
		}
		resp.body = body
		out = append(out, resp)
		if resp.close {
			break
		}
	}
	return out, nil
}

type payload struct {
	name string
	raw  string
	head bool
}

// junkPayloads are malformed or oversized requests.
func junkPayloads(rng *rand.Rand) []payload {
	bin := make([]byte, 300)
	for i := range bin {
		bin[i] = byte(rng.IntN(256))
	}
	const h = "Host: chaos\r\n"
	var many strings.Builder
	for i := range 400 {
		fmt.Fprintf(&many, "X-H-%d: v\r\n", i)
	}
	return []payload{
		{"garbage line", "GARBAGE\r\n\r\n", false},
		{"method only", "GET\r\n\r\n", false},
		{"HTTP/0.9", "GET /v1/id\r\n\r\n", false},
		{"no Host", "GET /v1/id HTTP/1.1\r\n\r\n", false},
		{"HTTP/9.9", "GET /v1/id HTTP/9.9\r\n" + h + "\r\n", false},
		{"double spaces", "GET  /v1/id  HTTP/1.1\r\n" + h + "\r\n", false},
		{"binary", string(bin) + "\r\n\r\n", false},
		{"NUL in path", "GET /v1/id\x00x HTTP/1.1\r\n" + h + "\r\n", false},
		{"bare LF", "GET /v1/status HTTP/1.1\nHost: chaos\n\n", false},
		{"header without colon", "GET /v1/status HTTP/1.1\r\n" + h + "NoColon\r\n\r\n", false},
		{"negative length", "GET /v1/id HTTP/1.1\r\n" + h + "Content-Length: -1\r\n\r\n", false},
		{"huge length", "GET /v1/id HTTP/1.1\r\n" + h + "Content-Length: 99999999999\r\n\r\n", false},
		{"body too large", "POST /v1/id HTTP/1.1\r\n" + h + "Content-Length: 5000\r\n\r\n" + strings.Repeat("x", 5000), false},
		{"bad chunked", "POST /v1/id HTTP/1.1\r\n" + h + "Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", false},
		{"two lengths", "GET /v1/id HTTP/1.1\r\n" + h + "Content-Length: 1\r\nContent-Length: 2\r\n\r\nab", false},
		{"64 KiB header", "GET /v1/id HTTP/1.1\r\n" + h + "X-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n", false},
		{"400 headers", "GET /v1/id HTTP/1.1\r\n" + h + many.String() + "\r\n", false},
		{"20 KiB path", "GET /v1/ids/" + strings.Repeat("9", 20<<10) + " HTTP/1.1\r\n" + h + "\r\n", false},
		{"long n", "GET /v1/ids?n=" + strings.Repeat("9", 4000) + " HTTP/1.1\r\n" + h + "\r\n", false},
		{"absolute URI", "GET http://evil.example/v1/id HTTP/1.1\r\n" + h + "\r\n", false},
		{"CONNECT", "CONNECT 127.0.0.1:22 HTTP/1.1\r\n" + h + "\r\n", false},
		{"HEAD /v1/id", "HEAD /v1/id HTTP/1.1\r\n" + h + "\r\n", true},
		{"Expect 100", "POST /v1/ids HTTP/1.1\r\n" + h + "Expect: 100-continue\r\nContent-Length: 3\r\n\r\nabc", false},
		{"upgrade", "GET /v1/id HTTP/1.1\r\n" + h + "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n", false},
	}
}

func junkMethod(rng *rand.Rand) string {
	if rng.IntN(10) < 7 {
		return "GET"
	}
	return []string{"HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH", "TRACE", "BREW", "get"}[rng.IntN(9)]
}

// junkPath is a random path and query: mostly near the real endpoints, with
// escapes, dot segments, bad numbers and stray bytes.
func junkPath(rng *rand.Rand) string {
	bases := []string{"/", "/v1/id", "/v1/ids", "/v1/ids/", "/v1/tickets/", "/v1/tickets/chaos_b1", "/v1/status",
		"/healthz", "/readyz", "/metrics", "/v1", "/v2/id", "//v1//id", "/v1/./id", "/v1/../v1/id", "/%2e%2e/"}
	pieces := []string{"%00", "%zz", "%2e%2e", "..", "//", "%2F", "%ff", "\xc3\xa9", "\xff", "a", "Z", "0",
		"-1", "18446744073709551616", "9223372036854775807", "tickets64", "chaos_b100", "_", "~", "%25", ";x", "@"}
	var b strings.Builder
	b.WriteString(bases[rng.IntN(len(bases))])
	for range rng.IntN(4) {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	if rng.IntN(3) > 0 {
		vals := []string{"-1", "0", "1", "5", "10001", "1e9", "99999999999999999999", "abc", "", "5&n=6", "%00",
			"1.5", "+3", "0x10", " ", "json", "xml"}
		keys := []string{"n", "format", "N", "n[]", "", "x", "%6e"}
		b.WriteByte('?')
		for i := range 1 + rng.IntN(3) {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString(keys[rng.IntN(len(keys))])
			b.WriteByte('=')
			b.WriteString(strings.ReplaceAll(vals[rng.IntN(len(vals))], " ", "%20"))
		}
	}
	return b.String()
}
