package snowflake_test

import (
	"fmt"
	"time"

	"ticketd/snowflake"
)

// A generator fenced one minute ahead, as a worker lease would fence it.
func ExampleGenerator() {
	now := time.Now().UnixMilli()
	g, err := snowflake.New(snowflake.Settings{
		Datacenter: 1,
		Worker:     7,
		FenceMs:    now + 60_000,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	id, err := g.Next()
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _ := g.Layout().Decompose(id)
	fmt.Println(p.Datacenter, p.Worker, p.Sequence)
	// Output: 1 7 0
}

func ExampleLayout_Decompose() {
	p, err := snowflake.DefaultLayout().Decompose(727360458012860416)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Time().Format(time.RFC3339Nano), p.Datacenter, p.Worker, p.Sequence)
	// Output: 2016-05-03T04:53:41.551Z 2 26 0
}

func ExampleParseLayout() {
	l, err := snowflake.ParseLayout("41/0/10/12")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(l.MaxWorker(), l.EndOfLife().Format("2006-01-02"))
	_, err = snowflake.ParseLayout("41/5/5/13")
	fmt.Println(err)
	// Output:
	// 1023 2080-07-10
	// snowflake: bad layout: widths 41/5/5/13 sum to 64, want 63 (the top bit of an ID is always 0)
}
