package natsidem_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/idemhq/idem/natsidem"
	"github.com/idemhq/idem/server/memstore"
)

func ExampleHandle() {
	url, err := embeddedURL() // a JetStream server for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	nc, _ := nats.Connect(url)
	defer nc.Close()
	js, _ := jetstream.New(nc)
	_, _ = js.CreateStream(ctx, jetstream.StreamConfig{Name: "EXAMPLE_ORDERS", Subjects: []string{"example-orders.>"}, Storage: jetstream.MemoryStorage})
	defer js.DeleteStream(ctx, "EXAMPLE_ORDERS")

	// The publisher retries a publish whose acknowledgement it lost: the
	// same ID, so the stream keeps one message.
	for range 2 {
		ack, err := natsidem.Publish(ctx, js, "example-orders.created", "order-7", []byte(`{"sku":"tea"}`), natsidem.PublishOptions{})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("published, duplicate:", ack.Duplicate)
	}

	cons, _ := js.CreateOrUpdateConsumer(ctx, "EXAMPLE_ORDERS", jetstream.ConsumerConfig{
		Durable: "billing", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
	})
	store := memstore.New(memstore.Options{}) // pgstore in transactional mode in production
	attempts := 0
	bill := func(ctx context.Context, msg jetstream.Msg) error {
		attempts++
		if attempts == 1 {
			return errors.New("billing service unavailable") // nakked, delivered again
		}
		fmt.Printf("billing %s\n", msg.Data())
		return nil
	}
	for range 2 {
		batch, _ := cons.Fetch(1)
		for msg := range batch.Messages() {
			d, _ := natsidem.Handle(ctx, store, msg, bill, natsidem.Options{RetryDelay: time.Millisecond})
			k, _ := natsidem.KeyOf(msg, "")
			fmt.Println(k.Key, d.Action)
		}
	}
	// Output:
	// published, duplicate: false
	// published, duplicate: true
	// id:order-7 nak
	// billing {"sku":"tea"}
	// id:order-7 ack
}
