package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// fakeSQS keeps queues in memory with SQS's visibility rules on a clock
// the test moves.
type fakeSQS struct {
	mu     sync.Mutex
	now    func() time.Time
	queues map[string]*fakeQueue
	seq    int
	// fail makes an operation ("SendMessage", "DeleteMessage", ...) fail.
	fail map[string]error
	// afterSend runs after a message is sent (a consumer acting at once).
	afterSend func(body string)
	// noReceiveCount leaves ApproximateReceiveCount out of what a receive
	// returns, as an emulator may.
	noReceiveCount bool
}

type fakeQueue struct {
	attrs map[string]string
	msgs  []*fakeMessage
}

type fakeMessage struct {
	id, body, handle string
	attrs            map[string]sqstypes.MessageAttributeValue
	system           map[string]string
	sentAt           time.Time
	visibleAt        time.Time
	receives         int
}

var _ SQS = (*fakeSQS)(nil)

func newFakeSQS(now func() time.Time) *fakeSQS {
	return &fakeSQS{now: now, queues: map[string]*fakeQueue{}, fail: map[string]error{}}
}

const fakeAccount = "https://sqs.eu-west-1.amazonaws.com/123456789012/"

// addQueue creates a queue; dlq, if not empty, is its dead-letter queue.
func (f *fakeSQS) addQueue(name, dlq string, maxReceive int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	url := fakeAccount + name
	attrs := map[string]string{"QueueArn": "arn:aws:sqs:eu-west-1:123456789012:" + name}
	if dlq != "" {
		attrs["RedrivePolicy"] = fmt.Sprintf(`{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:123456789012:%s","maxReceiveCount":%d}`, dlq, maxReceive)
	}
	f.queues[url] = &fakeQueue{attrs: attrs}
	return url
}

// add puts a message in the queue at url, sent at sentAt.
func (f *fakeSQS) add(url, body string, sentAt time.Time, attrs map[string]string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.newMessage(body, sentAt)
	for k, v := range attrs {
		m.attrs[k] = sqstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	f.queues[url].msgs = append(f.queues[url].msgs, m)
	return m.id
}

func (f *fakeSQS) newMessage(body string, sentAt time.Time) *fakeMessage {
	f.seq++
	return &fakeMessage{id: fmt.Sprintf("m-%02d", f.seq), body: body, sentAt: sentAt,
		attrs: map[string]sqstypes.MessageAttributeValue{}, system: map[string]string{}}
}

// bodies lists the bodies in the queue, and how many are hidden.
func (f *fakeSQS) bodies(url string) (all []string, hidden int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.queues[url].msgs {
		all = append(all, m.body)
		if m.visibleAt.After(f.now()) {
			hidden++
		}
	}
	return all, hidden
}

func (f *fakeSQS) message(url, id string) *fakeMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.queues[url].msgs {
		if m.id == id {
			return m
		}
	}
	return nil
}

func (f *fakeSQS) queue(op string, url *string) (*fakeQueue, error) {
	if err := f.fail[op]; err != nil {
		return nil, err
	}
	q, ok := f.queues[aws.ToString(url)]
	if !ok {
		return nil, &sqstypes.QueueDoesNotExist{Message: aws.String("The specified queue does not exist.")}
	}
	return q, nil
}

func (f *fakeSQS) GetQueueAttributes(_ context.Context, in *sqs.GetQueueAttributesInput, _ ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.queue("GetQueueAttributes", in.QueueUrl)
	if err != nil {
		return nil, err
	}
	attrs := map[string]string{}
	for k, v := range q.attrs {
		attrs[k] = v
	}
	visible, hidden := 0, 0
	for _, m := range q.msgs {
		if m.visibleAt.After(f.now()) {
			hidden++
		} else {
			visible++
		}
	}
	attrs["ApproximateNumberOfMessages"] = strconv.Itoa(visible)
	attrs["ApproximateNumberOfMessagesNotVisible"] = strconv.Itoa(hidden)
	attrs["ApproximateNumberOfMessagesDelayed"] = "0"
	return &sqs.GetQueueAttributesOutput{Attributes: attrs}, nil
}

func (f *fakeSQS) ReceiveMessage(_ context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.queue("ReceiveMessage", in.QueueUrl)
	if err != nil {
		return nil, err
	}
	out := &sqs.ReceiveMessageOutput{}
	now := f.now()
	for _, m := range q.msgs {
		if len(out.Messages) == int(in.MaxNumberOfMessages) {
			break
		}
		if m.visibleAt.After(now) {
			continue
		}
		m.receives++
		m.visibleAt = now.Add(time.Duration(in.VisibilityTimeout) * time.Second)
		f.seq++
		m.handle = fmt.Sprintf("h-%s-%d", m.id, f.seq)
		sys := map[string]string{"SentTimestamp": strconv.FormatInt(m.sentAt.UnixMilli(), 10)}
		if !f.noReceiveCount {
			sys["ApproximateReceiveCount"] = strconv.Itoa(m.receives)
		}
		for k, v := range m.system {
			sys[k] = v
		}
		out.Messages = append(out.Messages, sqstypes.Message{
			MessageId: aws.String(m.id), ReceiptHandle: aws.String(m.handle), Body: aws.String(m.body),
			MessageAttributes: m.attrs, Attributes: sys,
		})
	}
	return out, nil
}

func (f *fakeSQS) ChangeMessageVisibilityBatch(_ context.Context, in *sqs.ChangeMessageVisibilityBatchInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.queue("ChangeMessageVisibilityBatch", in.QueueUrl)
	if err != nil {
		return nil, err
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	for _, e := range in.Entries {
		found := false
		for _, m := range q.msgs {
			if m.handle == aws.ToString(e.ReceiptHandle) {
				m.visibleAt = f.now().Add(time.Duration(e.VisibilityTimeout) * time.Second)
				found = true
			}
		}
		if !found {
			out.Failed = append(out.Failed, sqstypes.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid")})
		}
	}
	return out, nil
}

func (f *fakeSQS) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	f.mu.Lock()
	q, err := f.queue("SendMessage", in.QueueUrl)
	if err != nil {
		f.mu.Unlock()
		return nil, err
	}
	m := f.newMessage(aws.ToString(in.MessageBody), f.now())
	for k, v := range in.MessageAttributes {
		m.attrs[k] = v
	}
	for k, v := range in.MessageSystemAttributes {
		m.system[k] = aws.ToString(v.StringValue)
	}
	q.msgs = append(q.msgs, m)
	hook := f.afterSend
	f.mu.Unlock()
	if hook != nil {
		hook(m.body)
	}
	return &sqs.SendMessageOutput{MessageId: aws.String(m.id)}, nil
}

func (f *fakeSQS) DeleteMessage(_ context.Context, in *sqs.DeleteMessageInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q, err := f.queue("DeleteMessage", in.QueueUrl)
	if err != nil {
		return nil, err
	}
	for i, m := range q.msgs {
		if m.handle == aws.ToString(in.ReceiptHandle) {
			q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
			return &sqs.DeleteMessageOutput{}, nil
		}
	}
	return nil, &sqstypes.ReceiptHandleIsInvalid{Message: aws.String("stale receipt handle")}
}

var errFake = errors.New("fake: injected failure")
