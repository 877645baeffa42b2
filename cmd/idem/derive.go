package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/idemhq/idem"
)

func newDeriveCmd(a *app) *cobra.Command {
	var hmacEnv string
	cmd := &cobra.Command{
		Use:   "derive NAMESPACE [PART...]",
		Short: "Print the key idem.DeriveKey or idem.DeriveKeyHMAC gives",
		Long: `derive prints the deterministic idempotency key that idem.DeriveKey gives
for a namespace and parts, so that an operator can find an operation's key
from its business IDs. With --hmac-key-env it prints idem.DeriveKeyHMAC's
key, keyed with the secret in that environment variable (never a flag,
which would show in the process list and shell history).`,
		Example: `  idem derive payout 2026-12-25 417
  IDEM_SECRET=... idem derive --hmac-key-env IDEM_SECRET payout 2026-12-25 417`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, parts := args[0], args[1:]
			var key string
			if hmacEnv != "" {
				secret := a.getenv(hmacEnv)
				if secret == "" {
					return usagef("--hmac-key-env %s: the environment variable is not set", hmacEnv)
				}
				key = idem.DeriveKeyHMAC([]byte(secret), ns, parts...)
			} else {
				key = idem.DeriveKey(ns, parts...)
			}
			if a.json {
				if parts == nil {
					parts = []string{}
				}
				return a.writeJSON(struct {
					Key       string   `json:"key"`
					Namespace string   `json:"namespace"`
					Parts     []string `json:"parts"`
					HMAC      bool     `json:"hmac"`
				}{key, ns, parts, hmacEnv != ""})
			}
			_, err := fmt.Fprintln(a.stdout, key)
			return err
		},
	}
	cmd.Flags().StringVar(&hmacEnv, "hmac-key-env", "", "derive with DeriveKeyHMAC, keyed with the secret in this environment `VARIABLE`")
	return cmd
}
