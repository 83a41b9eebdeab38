//go:build integration

package ddbmodel

import (
	"context"
	"testing"
	"time"
)

// TestDifferentialStore runs the scenario of the real Store both ways: on
// DynamoDB Local through a recording client, its requests replayed on a
// fresh model; and on the model, its recording replayed on DynamoDB Local
// (as the simulator replays a schedule). Every reply is compared, then the
// tables.
func TestDifferentialStore(t *testing.T) {
	for _, tc := range []struct {
		name      string
		composite bool
		onModel   bool // record on the model, replay on DynamoDB Local
	}{
		{"Schema=simple", false, false},
		{"Schema=composite", true, false},
		{"Schema=simple/Replayed", false, true},
		{"Schema=composite/Replayed", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "diff-store-" + map[bool]string{false: "simple", true: "composite"}[tc.composite] + map[bool]string{false: "-", true: "-replayed-"}[tc.onModel]
			receipts, single, ledger := prefix+"receipts", prefix+"single", prefix+"ledger"
			model := New()
			createLocal(t, model, receipts, "pk", "")
			createLocal(t, model, single, "PK", "SK")
			createLocal(t, model, ledger, "id", "")
			table := receipts
			if tc.composite {
				table = single
			}

			var calls []Call
			var replayOn Client = model
			if tc.onModel {
				model.SetRecorder(func(c Call) { calls = append(calls, c) })
				newScenario(t, model, table, ledger, tc.composite).run()
				model.SetRecorder(nil)
				replayOn = local
			} else {
				rec := &recorder{Client: local}
				newScenario(t, rec, table, ledger, tc.composite).run()
				calls = rec.calls
			}

			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for _, m := range Replay(ctx, calls, replayOn) {
				t.Error(m)
			}
			for _, name := range []string{receipts, single, ledger} {
				compareTables(t, model, name)
			}
			t.Logf("%d requests compared", len(calls))
		})
	}
}
