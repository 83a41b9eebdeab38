package consumer

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/exactlyonce/sqsidem/pkg/idem"
	"github.com/exactlyonce/sqsidem/pkg/idem/sqsbatch"
)

func message(id, body string, attrs map[string]string) events.SQSMessage {
	m := events.SQSMessage{MessageId: id, Body: body}
	for k, v := range attrs {
		if m.MessageAttributes == nil {
			m.MessageAttributes = map[string]events.SQSMessageAttribute{}
		}
		m.MessageAttributes[k] = events.SQSMessageAttribute{DataType: "String", StringValue: &v}
	}
	return m
}

func TestKeyField(t *testing.T) {
	key := KeyField("bookingId")
	tests := []struct {
		name    string
		msg     events.SQSMessage
		want    string
		wantErr error // nil: any error when want is ""
	}{
		{"attribute", message("m", `{}`, map[string]string{"bookingId": "b-1"}), "b-1", nil},
		{"body", message("m", `{"bookingId":"b-1","nights":2}`, nil), "b-1", nil},
		{"number in the body", message("m", `{"bookingId":42}`, nil), "42", nil},
		{"both agree", message("m", `{"bookingId":"b-1"}`, map[string]string{"bookingId": "b-1"}), "b-1", nil},
		{"both differ", message("m", `{"bookingId":"b-2"}`, map[string]string{"bookingId": "b-1"}), "", ErrKeyConflict},
		{"attribute, body not JSON", message("m", `not json`, map[string]string{"bookingId": "b-1"}), "b-1", nil},
		{"neither", message("m", `{"roomId":"r"}`, nil), "", sqsbatch.ErrNoKey},
		{"not JSON, no attribute", message("m", `{"bookingId": "b-`, nil), "", sqsbatch.ErrNoKey},
		{"other attribute", message("m", `{}`, map[string]string{"orderId": "o-1"}), "", sqsbatch.ErrNoKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := key(tt.msg)
			if got != tt.want || (tt.want != "") == (err != nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("key = %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestEffectModes(t *testing.T) {
	lease := func(context.Context, string, events.SQSMessage) ([]byte, error) { return nil, nil }
	tx := func(context.Context, string, events.SQSMessage) (idem.TxEffect, error) { return idem.TxEffect{}, nil }
	for _, tt := range []struct {
		eff  Effect
		want []string
	}{
		{Effect{}, nil},
		{Effect{Lease: lease}, []string{ModeLease}},
		{Effect{Tx: tx}, []string{ModeTransactional}},
		{Effect{Lease: lease, Tx: tx}, Modes()},
	} {
		if got := tt.eff.Modes(); !slices.Equal(got, tt.want) {
			t.Errorf("Modes() = %v, want %v", got, tt.want)
		}
	}
}
