package sequence

import (
	"database/sql"
	"fmt"
	"reflect"
	"runtime"
	"runtime/metrics"
	"testing"

	"ticketd/ticket/internal/marks"
	"ticketd/ticket/internal/schema"
)

// BenchmarkCatalogGC measures what one garbage collection costs with a
// catalog of N sequences in memory, every one in use (its marks made): Go
// collects at least every two minutes, idle or not. Compare the sizes side by
// side, in one run:
//
//	go test -run '^$' -bench CatalogGC -benchtime 20x ./ticket
func BenchmarkCatalogGC(b *testing.B) {
	for _, n := range []int{100, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p := catalogInMemory(n)
			runtime.GC()
			sample := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
			metrics.Read(sample)
			before := sample[0].Value.Float64()
			b.ResetTimer()
			for range b.N {
				runtime.GC()
			}
			b.StopTimer()
			metrics.Read(sample)
			b.ReportMetric((sample[0].Value.Float64()-before)*1e3/float64(b.N), "gc-cpu-ms/op")
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.HeapAlloc)/float64(n), "heap-B/seq")
			runtime.KeepAlive(p)
		})
	}
}

// memCatalog is the catalog and the marks of a Pair, without its servers.
type memCatalog struct {
	marks *marks.Book
	seqs  *Sequences
}

// catalogInMemory is the catalog of a Pair of two servers, holding n sequences,
// each defined and pinned on both and in use, as after their first values.
// Names are one string each, as a scanned row's are.
func catalogInMemory(n int) *memCatalog {
	// Only the catalog and the marks: no server, no rotation.
	p := &memCatalog{marks: marks.NewBook(2), seqs: &Sequences{}}
	p.seqs.cat.init(2)
	rows := make([]schema.CatRow, 0, schema.CatalogPage)
	for k := 0; k < n; {
		rows = rows[:0]
		for ; k < n && len(rows) < schema.CatalogPage; k++ {
			rows = append(rows, schema.CatRow{Name: fmt.Sprintf("s%06d", k), Bits: 64, BlockSize: 1000, Version: uint64(k + 1),
				PinBits: sql.NullInt64{Int64: 64, Valid: true}, PinBlock: sql.NullInt64{Int64: 1000, Valid: true}})
		}
		for i := range 2 {
			p.seqs.applyCatalog(i, rows, true)
		}
	}
	p.seqs.settleCatalog()
	p.seqs.cat.each(func(q *Sequence) bool {
		p.seqs.use(q)
		m := q.MarksIn(p.marks)
		m.Raise(0, 7)
		m.Raise(1, 8)
		return true
	})
	p.marks.ForgetPending() // as after a flush
	return p
}

// TestCatalogDefsHoldNoPointer: what each server holds of a sequence
// (seqDef, one per server and sequence) must stay free of pointers, or a
// garbage collection scans it 100,000 times over (BenchmarkCatalogGC).
func TestCatalogDefsHoldNoPointer(t *testing.T) {
	var walk func(reflect.Type) string
	walk = func(ty reflect.Type) string {
		switch ty.Kind() {
		case reflect.Struct:
			for i := range ty.NumField() {
				if where := walk(ty.Field(i).Type); where != "" {
					return ty.Field(i).Name + "." + where
				}
			}
			return ""
		case reflect.Array:
			return walk(ty.Elem())
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			return ""
		}
		return ty.Kind().String()
	}
	if where := walk(reflect.TypeFor[seqDef]()); where != "" {
		t.Fatalf("seqDef holds a pointer at %s, want none", where)
	}
}
