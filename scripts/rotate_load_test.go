package scripts

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// pathLoad requests one path of a ticketd with a few clients until stopped
// (or a request cap is reached), counting answers and failures.
type pathLoad struct {
	stop          atomic.Bool
	wg            sync.WaitGroup
	served, fails atomic.Int64
	mu            sync.Mutex
	first         []string // the first failures
}

// loadCap bounds a pathLoad however long a test takes: no client sends more.
const loadCap = 200_000

func startPathLoad(url string, clients int) *pathLoad {
	l := &pathLoad{}
	for range clients {
		l.wg.Go(func() {
			c := &http.Client{Timeout: 10 * time.Second}
			defer c.CloseIdleConnections()
			for i := 0; i < loadCap && !l.stop.Load(); i++ {
				resp, err := c.Get(url)
				var body []byte
				if err == nil {
					body, _ = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != 200 {
					l.fails.Add(1)
					l.mu.Lock()
					if len(l.first) < 5 {
						l.first = append(l.first, fmt.Sprintf("%v %q", err, body))
					}
					l.mu.Unlock()
					continue
				}
				l.served.Add(1)
			}
		})
	}
	return l
}

func (l *pathLoad) halt() {
	l.stop.Store(true)
	l.wg.Wait()
}

// waitUntil polls cond until it holds or timeout passes.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(50 * time.Millisecond) // polling, with the deadline above
	}
}

// bothServersUp reports whether ticketd at addr has every ticket server in
// rotation (/v1/status).
func bothServersUp(addr string) bool {
	resp, err := http.Get("http://" + addr + "/v1/status")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var st struct {
		TicketServers []struct {
			Up bool `json:"up"`
		} `json:"ticket_servers"`
	}
	if json.NewDecoder(resp.Body).Decode(&st) != nil || len(st.TicketServers) != 2 {
		return false
	}
	return st.TicketServers[0].Up && st.TicketServers[1].Up
}

// metric reads one unlabelled series of ticketd's /metrics.
func metric(t *testing.T, addr, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// dropIdleSessions ends ticketd's idle sessions on a server, as an idle
// timeout or a restart would: ticketd must connect again.
func dropIdleSessions(t *testing.T, sock string) {
	t.Helper()
	ids := rootSQL(t, sock, "SELECT GROUP_CONCAT(ID) FROM information_schema.PROCESSLIST WHERE USER = 'ticketd' AND COMMAND = 'Sleep'")
	if ids == "" || ids == "NULL" {
		return
	}
	var b strings.Builder
	for _, id := range strings.Split(ids, ",") {
		// KILL of a session gone meanwhile fails: the client goes on (--force).
		fmt.Fprintf(&b, "KILL CONNECTION %s;\n", id)
	}
	cmd := exec.Command("mariadb", "--no-defaults", "--force", "--protocol=socket", "--socket="+sock, "-uroot")
	cmd.Stdin = strings.NewReader(b.String())
	_ = cmd.Run() // a session that ended by itself is as good
}
