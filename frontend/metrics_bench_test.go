package frontend

import (
	"io"
	"testing"
	"time"
)

// BenchmarkRequestMetrics is what a request pays for its metrics: one count
// (endpoint × code) and one duration observed, alone and from every core at
// once (the same series, the worst case for contention):
//
//	go test ./frontend -run '^$' -bench 'RequestMetrics|Scrape' -benchmem
func BenchmarkRequestMetrics(b *testing.B) {
	m := everyFamilyServer(b).metrics
	d := 180 * time.Microsecond // a /v1/id answered from memory: the first buckets
	b.Run("count", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.count(epID, 200)
		}
	})
	b.Run("observe", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.observe(epID, d)
		}
	})
	b.Run("both-parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.count(epID, 200)
				m.observe(epID, d)
			}
		})
	})
}

// BenchmarkScrape is one /metrics with every family present (everyFamily's
// Server), written to io.Discard.
func BenchmarkScrape(b *testing.B) {
	s := everyFamilyServer(b)
	b.ReportAllocs()
	for b.Loop() {
		s.writeMetrics(io.Discard)
	}
}
