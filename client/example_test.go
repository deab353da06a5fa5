package client_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	"ticketd/client"
)

// fakeTicketd answers GET /v1/ids?n=N&format=binary the way ticketd does (8
// bytes per ID, big-endian), with IDs counted up from 1000: an example needs
// a server, and a real ticketd needs its ticket servers.
func fakeTicketd() *httptest.Server {
	var mu sync.Mutex
	next := uint64(1000)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := strconv.Atoi(r.URL.Query().Get("n"))
		if r.URL.Path != "/v1/ids" || r.URL.Query().Get("format") != "binary" || err != nil || n < 1 {
			http.Error(w, `{"error":"not in this example"}`, http.StatusNotFound)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		body := make([]byte, 0, 8*n)
		for range n {
			next++
			body = binary.BigEndian.AppendUint64(body, next)
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(body)
	}))
}

func Example() {
	ticketd := fakeTicketd() // in production: "http://10.0.0.5:8080" and a second ticketd
	defer ticketd.Close()

	c, err := client.New(client.Config{Endpoints: []string{ticketd.URL}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	id, err := c.Next(ctx) // from the local buffer; waits only for the first batch
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("first ID:", id)

	ids := make([]int64, 3)
	if _, err := c.NextN(ctx, ids); err != nil {
		log.Fatal(err)
	}
	fmt.Println("next three:", ids)
	// Output:
	// first ID: 1001
	// next three: [1002 1003 1004]
}

// Stats are counters an application exports (for example as Prometheus
// metrics).
func ExampleClient_Stats() {
	ticketd := fakeTicketd()
	defer ticketd.Close()
	c, err := client.New(client.Config{Endpoints: []string{ticketd.URL}, MinBatch: 100, MaxBatch: 100})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for range 10 {
		if _, err := c.Next(context.Background()); err != nil {
			log.Fatal(err)
		}
	}
	st := c.Stats()
	fmt.Println("served:", st.IDs.Served, "batch:", st.IDs.Batch, "endpoint up:", st.Endpoints[0].Up)
	// Output:
	// served: 10 batch: 100 endpoint up: true
}
