package webhook_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/idemhq/idem/server/memstore"
	"github.com/idemhq/idem/webhook"
)

func ExampleHandler() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	v, err := webhook.NewVerifier(secret, webhook.VerifyOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	credited := 0
	receive := webhook.Handler(memstore.New(memstore.Options{}), v,
		func(ctx context.Context, m webhook.Message) error {
			credited++ // the effect: with pgstore, an INSERT through pgstore.Tx(ctx)
			return nil
		}, webhook.Options{Scope: "payments-provider"})
	srv := httptest.NewServer(receive)
	defer srv.Close()

	// The sender's side: every delivery of a message has the same
	// webhook-id, and is signed when it is sent.
	signer, _ := webhook.NewSigner(secret)
	deliver := func(id, body string, tamper bool) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewBufferString(body))
		signer.Sign(req.Header, id, time.Now(), []byte(body))
		if tamper {
			req.Body = http.NoBody
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Printf("%s %d replayed=%s\n", id, resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
	}
	deliver("msg_1", `{"credit":100}`, false)
	deliver("msg_1", `{"credit":100}`, false) // a retry: the answer was lost
	deliver("msg_1", `{"credit":999}`, false) // another body under the same ID
	deliver("msg_2", `{"credit":100}`, true)  // the body changed on the way
	fmt.Println("credited:", credited)
	// Output:
	// msg_1 204 replayed=
	// msg_1 204 replayed=true
	// msg_1 422 replayed=
	// msg_2 401 replayed=
	// credited: 1
}
