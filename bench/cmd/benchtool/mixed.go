package main

import (
	"fmt"
)

// mixed is /v1/id alone against /v1/id beside saturating batches.
type mixed struct {
	alone, loaded         side
	batchIDs, batchErrors float64 // the batch load's IDs/s (median of rounds) and errors
}

func (m mixed) roundRatios() []float64 { return ratios(m.loaded.roundRPS, m.alone.roundRPS) }

func (m mixed) rpsRatio() float64 { return median(m.roundRatios()) }

func readMixed(runs []run, batchPath string) (mixed, error) {
	var alone, loaded []run
	for _, r := range runs {
		if r.label != "mixed" {
			continue
		}
		switch r.target {
		case "alone":
			alone = append(alone, r)
		case "loaded":
			loaded = append(loaded, r)
		}
	}
	if len(alone) == 0 || len(loaded) == 0 {
		return mixed{}, fmt.Errorf("report: mixed: %d runs alone and %d beside batches", len(alone), len(loaded))
	}
	m := mixed{alone: newSide(alone), loaded: newSide(loaded)}
	batches, err := readRuns(batchPath)
	if err != nil {
		return mixed{}, err
	}
	var ids []float64
	for _, b := range batches {
		ids = append(ids, b.rps()*10000)
		m.batchErrors += b.f["errors"] + b.f["non2xx"]
	}
	m.batchIDs = median(ids)
	return m, nil
}
