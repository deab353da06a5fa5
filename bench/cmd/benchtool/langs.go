package main

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// langClients are the figures of the Java and Node clients (bench/run.sh's
// raw/java-client.txt and raw/node-client.txt): each next from a warm buffer
// beside its language's UUID and a plain HTTP call to the same ticketd, in
// one process.
type langClients struct {
	javaNext, javaUUID, javaHTTP, javaSeqNext, javaSeqSustained, javaSustained float64
	nodeNext, nodeTryNext, nodeUUID, nodeHTTP, nodeSustained                   float64
	// The same calls in CPU time of the calling thread (process, for Node):
	// less disturbed by other work on the machine than the wall clock.
	javaNextCPU, javaUUIDCPU, javaSeqNextCPU, nodeNextCPU, nodeTryNextCPU, nodeUUIDCPU float64
	javaVersion, nodeVersion                                                           string
}

// cosIDSegmentChain is CosId's published figure for its SegmentChainId: IDs
// per second from one Java thread (JMH, 10 s), the fastest peer's.
const cosIDSegmentChain = 127e6

func readLangClients(raw string) (*langClients, error) {
	var l langClients
	for _, f := range []struct {
		file string
		vals []struct {
			k string
			v *float64
		}
		version *string
	}{
		{"java-client.txt", []struct {
			k string
			v *float64
		}{{"java_next_ns", &l.javaNext}, {"java_uuid_ns", &l.javaUUID}, {"java_http_ns", &l.javaHTTP},
			{"java_seq_next_ns", &l.javaSeqNext}, {"java_seq_sustained_per_s", &l.javaSeqSustained},
			{"java_sustained_ids_per_s", &l.javaSustained}, {"java_next_cpu_ns", &l.javaNextCPU},
			{"java_uuid_cpu_ns", &l.javaUUIDCPU}, {"java_seq_next_cpu_ns", &l.javaSeqNextCPU}}, &l.javaVersion},
		{"node-client.txt", []struct {
			k string
			v *float64
		}{{"node_next_ns", &l.nodeNext}, {"node_trynext_ns", &l.nodeTryNext}, {"node_uuid_ns", &l.nodeUUID},
			{"node_http_ns", &l.nodeHTTP}, {"node_sustained_ids_per_s", &l.nodeSustained},
			{"node_next_cpu_ns", &l.nodeNextCPU}, {"node_trynext_cpu_ns", &l.nodeTryNextCPU}, {"node_uuid_cpu_ns", &l.nodeUUIDCPU}}, &l.nodeVersion},
	} {
		kv, err := readKV(filepath.Join(raw, f.file))
		if err != nil {
			return nil, err
		}
		for _, x := range f.vals {
			v, err := strconv.ParseFloat(kv[x.k], 64)
			if err != nil || v <= 0 {
				return nil, fmt.Errorf("report: raw/%s: %s: %q", f.file, x.k, kv[x.k])
			}
			*x.v = v
		}
		*f.version = kv[map[string]string{"java-client.txt": "java_version", "node-client.txt": "node_version"}[f.file]]
	}
	return &l, nil
}

// add puts the rows into summary.txt; ratios > 1 mean the client's call is
// cheaper than the yardstick's.
func (l *langClients) add(s *summary) {
	s.add("java_next_ns", l.javaNext)
	s.add("java_uuid_ns", l.javaUUID)
	s.add("java_ratio_vs_uuid", l.javaUUID/l.javaNext)
	s.add("java_http_ns", l.javaHTTP)
	s.add("java_ratio_vs_http", l.javaHTTP/l.javaNext)
	s.add("java_seq_next_ns", l.javaSeqNext)
	s.add("java_seq_hot_m_per_s", 1e3/l.javaSeqNext)
	s.add("java_seq_hot_ratio_vs_cosid", 1e9/l.javaSeqNext/cosIDSegmentChain)
	s.add("java_seq_sustained_per_s", l.javaSeqSustained)
	s.add("java_sustained_ids_per_s", l.javaSustained)
	s.add("node_next_ns", l.nodeNext)
	s.add("node_trynext_ns", l.nodeTryNext)
	s.add("node_uuid_ns", l.nodeUUID)
	s.add("node_ratio_vs_uuid", l.nodeUUID/l.nodeNext)
	s.add("node_trynext_ratio_vs_uuid", l.nodeUUID/l.nodeTryNext)
	s.add("node_http_ns", l.nodeHTTP)
	s.add("node_ratio_vs_http", l.nodeHTTP/l.nodeNext)
	s.add("node_sustained_ids_per_s", l.nodeSustained)
	s.add("java_next_cpu_ns", l.javaNextCPU)
	s.add("java_uuid_cpu_ns", l.javaUUIDCPU)
	s.add("java_seq_next_cpu_ns", l.javaSeqNextCPU)
	s.add("node_next_cpu_ns", l.nodeNextCPU)
	s.add("node_trynext_cpu_ns", l.nodeTryNextCPU)
	s.add("node_uuid_cpu_ns", l.nodeUUIDCPU)
}

// targets: each client's next from its buffer beats its language's UUID.
func (l *langClients) targets(pass func(name, want, got string, ok bool) target) []target {
	return []target{
		pass("Java client, one next() vs UUID.randomUUID()", "≥ 1.0× (uuid ns ÷ client ns)",
			fmt.Sprintf("%.2f× (%.1f ns vs %.1f ns)", l.javaUUID/l.javaNext, l.javaNext, l.javaUUID), l.javaUUID/l.javaNext >= 1.0),
		pass("Node client, one await next() vs crypto.randomUUID()", "≥ 1.0× (uuid ns ÷ client ns)",
			fmt.Sprintf("%.2f× (%.1f ns vs %.1f ns)", l.nodeUUID/l.nodeNext, l.nodeNext, l.nodeUUID), l.nodeUUID/l.nodeNext >= 1.0),
	}
}

// section writes report.md's table of the Java and Node clients.
func (l *langClients) section(w func(format string, args ...any), duration string) {
	w("\n## Java and Node clients\n\n`clients/java` (JDK %s, `clients/java/build.sh bench`: JDK only, JMH's way: warm-up, then 5 measured iterations interleaved with the yardsticks', the median) "+
		"and `clients/node` (Node %s, `clients/node/bench/bench.js`), each against this ticketd in one process beside its language's UUID and a plain `GET /v1/id` "+
		"over a kept-alive connection (`java.net.http.HttpClient`, `node:http`). *One next*: from a warm buffer (bursts of 5000 IDs, 500 sequence values, between refills, outside the timer). "+
		"*Sustained*: one thread (one async caller) for %s s through one ticketd; the Java client's sequence values (`bench_b1000`) for 10 s, as CosId measures its SegmentChainId "+
		"(127 M IDs/s from one thread, published, not measured here).\n\n", l.javaVersion, l.nodeVersion, duration)
	w("| | client | UUID | ratio (UUID ÷ client) | plain GET /v1/id | ratio (HTTP ÷ client) | sustained |\n|---|---|---|---|---|---|---|\n")
	w("| Java `next()` | %.1f ns | %.1f ns | %.2f× | %.1f µs | %.0f× | %s IDs/s |\n", l.javaNext, l.javaUUID, l.javaUUID/l.javaNext, l.javaHTTP/1e3, l.javaHTTP/l.javaNext, human(l.javaSustained))
	w("| Java `Sequence.next()` | %.1f ns (%.1f M/s from one thread; CosId 127 M/s: %.2f×) | | | | | %s values/s |\n",
		l.javaSeqNext, 1e3/l.javaSeqNext, 1e9/l.javaSeqNext/cosIDSegmentChain, human(l.javaSeqSustained))
	w("| Node `await next()` | %.1f ns | %.1f ns | %.2f× | %.1f µs | %.0f× | %s IDs/s |\n", l.nodeNext, l.nodeUUID, l.nodeUUID/l.nodeNext, l.nodeHTTP/1e3, l.nodeHTTP/l.nodeNext, human(l.nodeSustained))
	w("| Node `tryNext()` (sync) | %.1f ns | | %.2f× | | | |\n", l.nodeTryNext, l.nodeUUID/l.nodeTryNext)
	w("\nThe same calls in CPU time (the calling thread's; Node's, the process'), which other work on the machine disturbs less: "+
		"Java `next()` %.1f ns against %.1f ns for `UUID.randomUUID()`, `Sequence.next()` %.1f ns; Node `await next()` %.1f ns, `tryNext()` %.1f ns, against %.1f ns for `crypto.randomUUID()`.\n",
		l.javaNextCPU, l.javaUUIDCPU, l.javaSeqNextCPU, l.nodeNextCPU, l.nodeTryNextCPU, l.nodeUUIDCPU)
}
