// This file holds Profile, one API's idempotency conventions in one value,
// and how a profile fills Options. The profiles themselves are in
// providers.go.

package idem

import (
	"slices"
	"strings"
	"time"
)

// A Profile carries one API's idempotency conventions: where the key goes
// and how long it may be, how long the server keeps it, how the API says a
// key was reused or a request already ran, which headers hint at retrying,
// and which headers it requires. Set it as Options.Profile; every Options
// field left zero takes the profile's value, and one set overrides it:
//
//	c, err := idem.New(idem.Options{Profile: idem.Stripe(), Journal: j})
//
// The profiles idem ships (Stripe, Adyen, PayPal, Square, GoCardless) are
// built from each provider's documents, named in their doc comments and
// Sources; where a provider documents no value, the profile takes the safe
// side (the shorter retention, the shorter key) and says so. A profile is a
// starting point: an API version or endpoint that differs is configured
// field by field, on Options or on a copy of the profile. The functions
// return a new value on every call, so changing one changes no other.
type Profile struct {
	// Name is the API's name, such as "stripe".
	Name string
	// Header or BodyKey is where the key goes (Options.Header,
	// Options.BodyKey). At most one is set.
	Header  string
	BodyKey string
	// MaxKeyLen is the longest key the API accepts (Options.MaxKeyLen).
	MaxKeyLen int
	// KeyRetention is how long the API keeps a key (Options.KeyRetention).
	KeyRetention time.Duration
	// RetryHints and RequiredHeaders name headers (Options.RetryHints,
	// Options.RequiredHeaders).
	RetryHints      []string
	RequiredHeaders []string
	// IsKeyReused and IsReplayed recognise the API's answers (see
	// Options.IsKeyReused, Options.IsReplayed). nil where idem's own
	// recognition suffices or the API documents no such answer.
	IsKeyReused func(*Response) bool
	IsReplayed  func(*Response) bool
	// Sources are the provider's documents the values come from.
	Sources []string
}

// apply returns o with its zero fields set from p.
func (p Profile) apply(o Options) Options {
	if o.Header == "" && o.BodyKey == "" {
		o.Header, o.BodyKey = p.Header, p.BodyKey
	}
	if o.MaxKeyLen == 0 {
		o.MaxKeyLen = p.MaxKeyLen
	}
	if o.KeyRetention == 0 {
		o.KeyRetention = p.KeyRetention
	}
	if o.RetryHints == nil {
		o.RetryHints = slices.Clone(p.RetryHints)
	}
	if o.RequiredHeaders == nil {
		o.RequiredHeaders = slices.Clone(p.RequiredHeaders)
	}
	if o.IsKeyReused == nil {
		o.IsKeyReused = p.IsKeyReused
	}
	if o.IsReplayed == nil {
		o.IsReplayed = p.IsReplayed
	}
	return o
}

// Profiles returns every profile idem ships, ordered by name.
func Profiles() []Profile {
	return []Profile{Adyen(), GoCardless(), PayPal(), Square(), Stripe()}
}

// ProfileNamed returns the profile whose Name is name, in any case, and
// whether there is one: the lookup for a command-line flag such as
// --profile stripe.
func ProfileNamed(name string) (Profile, bool) {
	for _, p := range Profiles() {
		if strings.EqualFold(p.Name, name) {
			return p, true
		}
	}
	return Profile{}, false
}
