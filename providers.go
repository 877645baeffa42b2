// This file holds the profiles idem ships, one per API, each value with the
// provider's document it comes from, and the recognisers of the answers
// those APIs give in their own words.

package idem

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/idemhq/idem/internal/canonjson"
)

// Documents the profiles cite.
const (
	stripeIdempotencyDoc = "https://docs.stripe.com/api/idempotent_requests"
	stripeErrorsDoc      = "https://docs.stripe.com/error-low-level"
	stripeErrorTypesDoc  = "https://docs.stripe.com/api/errors"

	adyenIdempotencyDoc = "https://docs.adyen.com/development-resources/api-idempotency"

	paypalIdempotencyDoc = "https://developer.paypal.com/api/rest/reference/idempotency/"
	paypalOrdersDoc      = "https://developer.paypal.com/api/orders/v2/"
	paypalTokensDoc      = "https://developer.paypal.com/api/payment-tokens/v3/setup-tokens-create"
	paypalReusedDoc      = "https://developer.paypal.com/api/payment-tokens/v3/errors/paypal_request_id_previously_used"
	paypalError422Doc    = "https://developer.paypal.com/sdk/vault/v2/definitions/error_422"

	squareIdempotencyDoc = "https://developer.squareup.com/docs/working-with-apis/idempotency"
	squareCreatePayment  = "https://github.com/square/square-php-sdk/blob/master/doc/models/create-payment-request.md"
	squareErrorCodes     = "https://github.com/square/square-php-sdk/blob/master/doc/models/error-code.md"
	squareErrorsDoc      = "https://developer.squareup.com/docs/build-basics/handling-errors"
	squareRetentionForum = "https://developer.squareup.com/forums/t/how-long-are-idempotency-keys-retained-for-the-createpayment-endpoint/28303"

	gocardlessIdempotencyDoc = "https://gocardless.com/blog/idempotency-keys/"
	gocardlessVersionDoc     = "https://gocardless.com/blog/api-release-2015-07-06"
)

// undocumentedRetention is the key retention idem assumes for an API that
// publishes none: short, so that an operation left pending longer (a long
// outage, a process down for hours) is reconciled rather than sent again
// to a server that may have forgotten its key. A restart after a crash
// normally resumes well within it.
const undocumentedRetention = time.Hour

// Stripe returns the profile of Stripe's API (v1):
//
//   - the key goes in the Idempotency-Key header, up to 255 characters
//     (stripeIdempotencyDoc: "Idempotency keys are up to 255 characters
//     long"); Stripe names no alphabet, and suggests V4 UUIDs;
//   - keys are kept at least 24 hours (stripeIdempotencyDoc: keys may be
//     removed "after they're at least 24 hours old"; stripeErrorsDoc:
//     "keys expire out of the system after 24 hours");
//   - a key reused with other parameters is answered with an error whose
//     type is idempotency_error (stripeErrorTypesDoc), which idem
//     recognises at any status; Stripe documents no status for it;
//   - Stripe-Should-Retry: true means retry, false means do not: "it won't
//     have an additional effect" (stripeErrorsDoc, "The Stripe-Should-Retry
//     header"); 409 means "the request conflicts with another request
//     (perhaps due to using the same idempotent key)" and 429, 500, 502,
//     503, 504 are the other statuses it lists as worth a retry, all of
//     which idem retries by default;
//   - a replay carries Idempotent-Replayed: true (stripeErrorsDoc), which
//     idem reads by default;
//   - no header is required beyond the key and the credentials.
func Stripe() Profile {
	return Profile{
		Name:         "stripe",
		Header:       "Idempotency-Key",
		MaxKeyLen:    255,
		KeyRetention: 24 * time.Hour,
		RetryHints:   []string{"Stripe-Should-Retry"},
		Sources:      []string{stripeIdempotencyDoc, stripeErrorsDoc, stripeErrorTypesDoc},
	}
}

// Adyen returns the profile of Adyen's APIs, all from adyenIdempotencyDoc:
//
//   - the key goes in the Idempotency-Key header (Adyen: code for the name
//     case-insensitively), "a maximum of 64 characters"; Adyen names no
//     alphabet and recommends a UUID;
//   - keys are "valid for a minimum period of 7 days after first
//     submission" (an earlier revision of the page said 31 days: the
//     shorter is taken);
//   - Adyen documents no answer for a key reused with another request; a
//     repeat of a processed request gets "the response to the first
//     attempt", and the page names no replay marker (responses echo the
//     idempotency-key header);
//   - a transient error carries "transient-error: true": retry later with
//     the same key; a request sent while the first with its key is still
//     running gets 422 or 409 with error code 704, "request already
//     processed or in progress"; 503 with error code 703 means the
//     idempotency store is unavailable, also marked transient. The page
//     also says not to retry an error without that header; idem still
//     retries the statuses it retries by default with the same key, which
//     the same page says is safe for a request Adyen already processed;
//   - no header is required beyond the key and the credentials.
func Adyen() Profile {
	return Profile{
		Name:         "adyen",
		Header:       "Idempotency-Key",
		MaxKeyLen:    64,
		KeyRetention: 7 * 24 * time.Hour,
		RetryHints:   []string{"Transient-Error"},
		Sources:      []string{adyenIdempotencyDoc},
	}
}

// PayPal returns the profile of PayPal's REST APIs:
//
//   - the key goes in the PayPal-Request-Id header (paypalIdempotencyDoc);
//     how long it may be and how long it is kept vary by API, "see the
//     reference for your API". Orders v2 takes 1 to 108 characters and
//     keeps keys 6 hours (paypalOrdersDoc); Payment Method Tokens v3 takes
//     1 to 108 and keeps them 3 hours (paypalTokensDoc); Payments v2
//     captures allow longer keys kept 45 days. The profile takes the
//     shorter of each: 108 characters, 3 hours. Set Options.KeyRetention
//     for the API you call. The documented pattern admits any character;
//   - a key already used for another request is answered with the issue
//     PAYPAL_REQUEST_ID_PREVIOUSLY_USED (paypalReusedDoc), inside a 422
//     UNPROCESSABLE_ENTITY error whose details list the issues
//     (paypalError422Doc); the deprecated v1 APIs name the error
//     DUPLICATE_REQUEST_ID;
//   - "retry idempotent calls that fail with network timeouts or HTTP 5xx
//     status codes for as long as the server stores the ID"
//     (paypalIdempotencyDoc); a repeat gets "the latest status of the
//     previous request"; PayPal documents no retry hint header;
//   - no header is required beyond the key and the credentials.
func PayPal() Profile {
	return Profile{
		Name:         "paypal",
		Header:       "PayPal-Request-Id",
		MaxKeyLen:    108,
		KeyRetention: 3 * time.Hour,
		IsKeyReused:  paypalKeyReused,
		Sources:      []string{paypalIdempotencyDoc, paypalOrdersDoc, paypalTokensDoc, paypalReusedDoc, paypalError422Doc},
	}
}

// Square returns the profile of Square's APIs:
//
//   - the key goes in the JSON body's idempotency_key field
//     (squareIdempotencyDoc); CreatePayment takes 1 to 45 characters
//     (squareCreatePayment), other endpoints allow more: the profile takes
//     45. Keys "can be any valid string", though "the number of allowed
//     characters might be less than the stated maximum, if multi-byte
//     characters are used"; idem's keys are ASCII;
//   - Square does not publish how long it keeps keys (its staff say so on
//     its forum, squareRetentionForum): the profile assumes one hour, the
//     safe side;
//   - a key used again with different request data is answered with an
//     error whose code is IDEMPOTENCY_KEY_REUSED (squareErrorCodes), in
//     the errors array every error response carries (squareErrorsDoc);
//     Square documents no status for it. A repeat of the same request gets
//     "the response as the first successful" one (squareIdempotencyDoc);
//   - the error code TEMPORARY_ERROR says a call can be retried with the
//     same key (squareErrorCodes); it is in the body, not a header, and
//     the profile does not read it: a 5xx carrying it is retried anyway;
//   - no header is required beyond the credentials.
func Square() Profile {
	return Profile{
		Name:         "square",
		BodyKey:      "idempotency_key",
		MaxKeyLen:    45,
		KeyRetention: undocumentedRetention,
		IsKeyReused:  squareKeyReused,
		Sources:      []string{squareIdempotencyDoc, squareCreatePayment, squareErrorCodes, squareErrorsDoc, squareRetentionForum},
	}
}

// GoCardless returns the profile of GoCardless's API:
//
//   - the key goes in the Idempotency-Key header of creation requests
//     (gocardlessIdempotencyDoc). idem found no documented length limit
//     or alphabet: the profile takes 36, the longest key idem mints or
//     derives, so every key idem makes fits and a longer one of your own
//     is refused locally until you raise Options.MaxKeyLen;
//   - idem found no documented key retention: the profile assumes one
//     hour, the safe side;
//   - a request whose key already created a resource is answered 409 with
//     type invalid_state and the reason idempotent_creation_conflict,
//     naming the resource in links.conflicting_resource_id
//     (gocardlessIdempotencyDoc). That is the answer to a retry of a
//     request that ran, so the profile takes it as a replay: final, marked
//     Replayed, and carrying the resource's ID. GoCardless does not tell a
//     different request under a used key apart from a retry;
//   - GoCardless documents no retry hint header;
//   - every request carries the GoCardless-Version header
//     (gocardlessVersionDoc), which the profile requires.
func GoCardless() Profile {
	return Profile{
		Name:            "gocardless",
		Header:          "Idempotency-Key",
		MaxKeyLen:       36,
		KeyRetention:    undocumentedRetention,
		RequiredHeaders: []string{"GoCardless-Version"},
		IsReplayed:      gocardlessReplayed,
		Sources:         []string{gocardlessIdempotencyDoc, gocardlessVersionDoc},
	}
}

// decodeError decodes a response's JSON error body into v, reporting
// false for one that is not JSON or too large to be an error document.
func decodeError(r *Response, v any) bool {
	return len(r.Body) > 0 && len(r.Body) <= maxReuseBody && canonjson.IsJSON(r.Header.Get("Content-Type")) &&
		json.Unmarshal(r.Body, v) == nil
}

// paypalKeyReused recognises PayPal's answer to a PayPal-Request-Id already
// used for another request.
func paypalKeyReused(r *Response) bool {
	var doc struct {
		Name    string `json:"name"`
		Details []struct {
			Issue string `json:"issue"`
		} `json:"details"`
	}
	if !decodeError(r, &doc) {
		return false
	}
	if doc.Name == "DUPLICATE_REQUEST_ID" {
		return true
	}
	for _, d := range doc.Details {
		if d.Issue == "PAYPAL_REQUEST_ID_PREVIOUSLY_USED" {
			return true
		}
	}
	return false
}

// squareKeyReused recognises Square's answer to an idempotency_key used
// again with different request data.
func squareKeyReused(r *Response) bool {
	var doc struct {
		Errors []struct {
			Code string `json:"code"`
		} `json:"errors"`
	}
	if !decodeError(r, &doc) {
		return false
	}
	for _, e := range doc.Errors {
		if e.Code == "IDEMPOTENCY_KEY_REUSED" {
			return true
		}
	}
	return false
}

// gocardlessReplayed recognises GoCardless's answer to a retry of a
// creation that already ran: 409, invalid_state,
// idempotent_creation_conflict.
func gocardlessReplayed(r *Response) bool {
	if r.StatusCode != http.StatusConflict {
		return false
	}
	var doc struct {
		Error struct {
			Type   string `json:"type"`
			Errors []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	if !decodeError(r, &doc) || doc.Error.Type != "invalid_state" {
		return false
	}
	for _, e := range doc.Error.Errors {
		if e.Reason == "idempotent_creation_conflict" {
			return true
		}
	}
	return false
}
