package promtext

import (
	"runtime"
	"runtime/debug"
	"time"
)

// WriteGo writes the Go runtime's families, named as Prometheus' Go client
// names them (go_goroutines, go_memstats_*, go_gc_duration_seconds, …), so
// that dashboards made for any Go service read them. It stops the world for
// the moment runtime.ReadMemStats takes: once per scrape, never per request.
func WriteGo(w *Writer) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)

	// GC pauses as a summary: quantiles over the last pauses the runtime
	// kept, sum and count over the process's life.
	var gc debug.GCStats
	gc.PauseQuantiles = make([]time.Duration, 5)
	debug.ReadGCStats(&gc)
	w.Family("go_gc_duration_seconds", Summary, "A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.")
	for i, q := range []string{"0", "0.25", "0.5", "0.75", "1"} {
		w.Float(`go_gc_duration_seconds{quantile="`+q+`"}`, gc.PauseQuantiles[i].Seconds())
	}
	w.Float("go_gc_duration_seconds_sum", gc.PauseTotal.Seconds())
	w.Int("go_gc_duration_seconds_count", gc.NumGC)

	w.Family("go_goroutines", Gauge, "Number of goroutines that currently exist.")
	w.Int("go_goroutines", int64(runtime.NumGoroutine()))
	threads, _ := runtime.ThreadCreateProfile(nil)
	w.Family("go_threads", Gauge, "Number of OS threads created.")
	w.Int("go_threads", int64(threads))
	w.Family("go_sched_gomaxprocs_threads", Gauge, "The current runtime.GOMAXPROCS setting: how many OS threads may run Go code at once.")
	w.Int("go_sched_gomaxprocs_threads", int64(runtime.GOMAXPROCS(0)))
	w.Family("go_info", Gauge, "Information about the Go environment.")
	w.Uint(Series("go_info", "version", runtime.Version()), 1)
	w.Family("go_gc_gomemlimit_bytes", Gauge, "The Go runtime's soft memory limit (GOMEMLIMIT); math.MaxInt64 when none.")
	w.Int("go_gc_gomemlimit_bytes", debug.SetMemoryLimit(-1))

	for _, f := range []struct {
		name string
		t    Type
		help string
		v    uint64
	}{
		{"go_memstats_alloc_bytes", Gauge, "Number of bytes allocated in heap and currently in use.", ms.Alloc},
		{"go_memstats_alloc_bytes_total", Counter, "Total number of bytes allocated in heap until now, even if released already.", ms.TotalAlloc},
		{"go_memstats_sys_bytes", Gauge, "Number of bytes obtained from system.", ms.Sys},
		{"go_memstats_mallocs_total", Counter, "Total number of heap objects allocated.", ms.Mallocs},
		{"go_memstats_frees_total", Counter, "Total number of heap objects freed.", ms.Frees},
		{"go_memstats_heap_alloc_bytes", Gauge, "Number of heap bytes allocated and currently in use.", ms.HeapAlloc},
		{"go_memstats_heap_sys_bytes", Gauge, "Number of heap bytes obtained from system.", ms.HeapSys},
		{"go_memstats_heap_idle_bytes", Gauge, "Number of heap bytes waiting to be used.", ms.HeapIdle},
		{"go_memstats_heap_inuse_bytes", Gauge, "Number of heap bytes that are in use.", ms.HeapInuse},
		{"go_memstats_heap_released_bytes", Gauge, "Number of heap bytes released to OS.", ms.HeapReleased},
		{"go_memstats_heap_objects", Gauge, "Number of currently allocated objects.", ms.HeapObjects},
		{"go_memstats_stack_inuse_bytes", Gauge, "Number of bytes obtained from system for stack allocator in non-CGO environments.", ms.StackInuse},
		{"go_memstats_gc_sys_bytes", Gauge, "Number of bytes used for garbage collection system metadata.", ms.GCSys},
		{"go_memstats_next_gc_bytes", Gauge, "Number of heap bytes when next garbage collection will take place.", ms.NextGC},
	} {
		w.Family(f.name, f.t, f.help)
		w.Uint(f.name, f.v)
	}
	w.Family("go_memstats_last_gc_time_seconds", Gauge, "Number of seconds since 1970 of last garbage collection.")
	w.Float("go_memstats_last_gc_time_seconds", float64(ms.LastGC)/1e9)
}
