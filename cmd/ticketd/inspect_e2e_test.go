package main

// Issue 36's tests of ticketd inspect against real deployments: its
// default is the layout a default deployment records, and with -servers it
// decodes with the layout and epoch the deployment recorded.

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"ticketd/internal/mysqltest"
)

// decoded is an ID's decoding, as inspect prints it and GET /v1/ids/{id}
// answers it.
type decoded map[string]any

// inspectIDs runs ticketd inspect in-process with args and the environment
// env, and returns the objects it printed, its stderr and its exit status.
func inspectIDs(t *testing.T, env map[string]string, args ...string) ([]decoded, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := exitCode(inspect(args, &out, &errb, func(k string) string { return env[k] }), &errb)
	var ds []decoded
	for line := range strings.SplitSeq(strings.TrimSpace(out.String()), "\n") {
		if line == "" {
			continue
		}
		var d decoded
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("inspect printed %q: %v", line, err)
		}
		ds = append(ds, d)
	}
	return ds, errb.String(), code
}

// serverDecoding is what the ticketd that issued id says of it.
func serverDecoding(t *testing.T, d *daemon, id int64) decoded {
	t.Helper()
	var v decoded
	d.getJSON("/v1/ids/"+strconv.FormatInt(id, 10), &v)
	return v
}

func oneID(t *testing.T, d *daemon) int64 {
	t.Helper()
	id, err := getID(http.DefaultClient, d.addr)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestE2EInspectDefaultDeployment: an ID of a deployment started as make
// run starts it (no -layout, no -datacenter) is decoded by inspect without
// flags exactly as the ticketd that issued it decodes it, with a worker ID
// above 31, where Twitter's 5/5 split (inspect's default before) reads
// another datacenter and worker; stderr names the layout it assumed.
func TestE2EInspectDefaultDeployment(t *testing.T) {
	mp := mysqltest.StartPair(t)
	// Tickets past 1,000: the worker IDs drawn from them are too.
	mp.Servers[0].Exec(t, "ALTER TABLE Tickets64 AUTO_INCREMENT = 1001")
	mp.Servers[1].Exec(t, "ALTER TABLE Tickets64 AUTO_INCREMENT = 1002")
	d := waitReady(t, launch(t, mp))
	if w := d.status().Worker; w < 32 {
		t.Fatalf("worker %d: the test needs one above 31", w)
	}
	id := oneID(t, d)
	want := serverDecoding(t, d, id)
	got, stderr, code := inspectIDs(t, nil, strconv.FormatInt(id, 10))
	if code != 0 || len(got) != 1 || !maps.Equal(got[0], want) {
		t.Fatalf("inspect %d: exit %d, %v; want %v, as ticketd decodes it (stderr %q)", id, code, got, want, stderr)
	}
	if !strings.Contains(stderr, "layout 41/0/10/12, epoch 1288834974657: what a new deployment records") {
		t.Errorf("inspect's stderr %q does not name the layout it assumed", stderr)
	}
	// What inspect's default was: Twitter's layout reads another worker.
	tw, _, _ := inspectIDs(t, nil, "-layout", "twitter", strconv.FormatInt(id, 10))
	if maps.Equal(tw[0], want) {
		t.Fatalf("-layout twitter decodes %d as ticketd does (%v): the test shows nothing", id, want)
	}
}

// TestE2EInspectReadsServers: with -servers (ticketd's account, the
// password in TICKETD_INSPECT_PASSWORD), inspect decodes with the layout
// and epoch the deployment recorded (here Twitter's, datacenter 3, another
// epoch: a deployment of an earlier release), as the ticketd that issued
// the ID does, where its default would not; stderr says the layout was
// recorded on the servers. Before any ticketd started, it says no
// deployment is recorded (exit 1); without a password it is a usage error.
func TestE2EInspectReadsServers(t *testing.T) {
	mp := mysqltest.StartPair(t)
	servers := mp.Servers[0].Addr() + "," + mp.Servers[1].Addr()
	env := map[string]string{"TICKETD_INSPECT_PASSWORD": mp.Password}
	args := []string{"-servers", servers, "-user", mp.User}

	if _, stderr, code := inspectIDs(t, env, append(args, "1")...); code != 1 || !strings.Contains(stderr, "no deployment recorded") {
		t.Fatalf("inspect -servers before any ticketd started: exit %d, %q; want 1 and no deployment recorded", code, stderr)
	}
	if _, stderr, code := inspectIDs(t, nil, append(args, "-password-file", t.TempDir()+"/none", "1")...); code != 2 || !strings.Contains(stderr, "TICKETD_INSPECT_PASSWORD") {
		t.Fatalf("inspect -servers without a password: exit %d, %q; want 2, naming TICKETD_INSPECT_PASSWORD", code, stderr)
	}

	d := waitReady(t, launch(t, mp, "-layout", "twitter", "-datacenter", "3", "-epoch", "1600000000000"))
	id := oneID(t, d)
	want := serverDecoding(t, d, id)
	got, stderr, code := inspectIDs(t, env, append(args, strconv.FormatInt(id, 10))...)
	if code != 0 || len(got) != 1 || !maps.Equal(got[0], want) {
		t.Fatalf("inspect -servers %d: exit %d, %v; want %v, as ticketd decodes it (stderr %q)", id, code, got, want, stderr)
	}
	if !strings.Contains(stderr, "layout 41/5/5/12, epoch 1600000000000: recorded on the ticket servers") {
		t.Errorf("inspect -servers: stderr %q does not say the layout was recorded on the servers", stderr)
	}
	if strings.Contains(stderr, "no snowflake ID") {
		t.Errorf("inspect -servers %d, an ID the deployment issued: stderr %q says it is none", id, stderr)
	}
	// A value of a sequence taken for an ID: decoded, and said to be below
	// the deployment's first start.
	v := strconv.FormatUint(getTicket(t, d.addr, "tickets64"), 10)
	if got, stderr, code := inspectIDs(t, env, append(args, v)...); code != 0 || len(got) != 1 ||
		!strings.Contains(stderr, v+" is no snowflake ID of this deployment: it is below ") ||
		!strings.Contains(stderr, "(its first start, ") || !strings.Contains(stderr, "a value of a named sequence or a fallback ID") {
		t.Errorf("inspect -servers %s, a ticket: exit %d, %v, stderr %q; want it decoded and said to be no ID of the deployment", v, code, got, stderr)
	}
	// TICKETD_INSPECT_SERVERS does what -servers does.
	env["TICKETD_INSPECT_SERVERS"], env["TICKETD_INSPECT_USER"] = servers, mp.User
	if got, _, code := inspectIDs(t, env, strconv.FormatInt(id, 10)); code != 0 || !maps.Equal(got[0], want) {
		t.Fatalf("inspect with TICKETD_INSPECT_SERVERS: exit %d, %v; want %v", code, got, want)
	}
	if def, _, _ := inspectIDs(t, nil, strconv.FormatInt(id, 10)); maps.Equal(def[0], want) {
		t.Fatalf("inspect without -servers decodes %d as the deployment does (%v): the test shows nothing", id, want)
	}
	// A server down: said once, in plain words, without repair's reason
	// (the marks), which is not inspect's.
	mp.Servers[1].Stop(t)
	server2 := "server 2 (" + mp.Servers[1].Addr() + ")"
	if _, stderr, code := inspectIDs(t, env, "1"); code != 1 || !strings.Contains(stderr, "every server of the pair must be reachable and in its place: ") ||
		strings.Contains(stderr, "marks") || strings.Count(stderr, server2) != 1 {
		t.Fatalf("inspect -servers with server 2 down: exit %d, %q; want 1, naming %s once and no marks", code, stderr, server2)
	}
}
