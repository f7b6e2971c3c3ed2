package app

import (
	"slices"
	"testing"

	"github.com/warden-run/warden/config"
)

// TestSecretValuesHoldConsoleClientSecret: the console's OpenID client
// secret is masked in logs like server.token.
func TestSecretValuesHoldConsoleClientSecret(t *testing.T) {
	cfg := &config.Config{}
	cfg.Server.ConsoleLogin.ClientSecret = "oidc-client-secret-value"
	if !slices.Contains(SecretValues(cfg), "oidc-client-secret-value") {
		t.Error("server.console_login.client_secret is not among the values logs mask")
	}
}
