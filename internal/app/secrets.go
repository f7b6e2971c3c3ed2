package app

import (
	"os"
	"slices"

	"github.com/warden-run/warden/config"
	"github.com/warden-run/warden/internal/redact"
)

// RedactWith makes s the secrets of the config in force, now and after
// every reload (SecretValues), with extra values that are not in config
// (serve's --token). cmd/warden redacts its stderr log and the audit log
// with s (package redact says why).
func (a *App) RedactWith(s *redact.Secrets, extra ...string) {
	a.secretsExtra = slices.Clone(extra) // before the Store that publishes it
	a.secrets.Store(s)
	a.refreshSecrets(a.Config())
}

func (a *App) refreshSecrets(cfg *config.Config) {
	if s := a.secrets.Load(); s != nil {
		s.Set(append(SecretValues(cfg), a.secretsExtra...))
	}
}

// SecretValues lists the values of cfg that no log may show: the values of
// env.values and of each tool's config (literal or from the host variable
// they name), of each secrets entry as its source holds it now (one that
// cannot be read is left out: warden.env learns it when it is read),
// server.token and server.state_key.
func SecretValues(cfg *config.Config) []string {
	values := []string{cfg.Server.Token, cfg.Server.StateKey, cfg.Server.ConsoleLogin.ClientSecret}
	add := func(v config.EnvValue) {
		switch {
		case v.Value != "":
			values = append(values, v.Value)
		case v.FromEnv != "":
			values = append(values, os.Getenv(v.FromEnv))
		}
	}
	for _, v := range cfg.Env.Values {
		add(v)
	}
	for _, g := range cfg.Tools.Grants {
		for _, v := range g.Config {
			add(v)
		}
	}
	for name := range cfg.Secrets {
		if v, err := cfg.SecretSource(name).Read(); err == nil {
			values = append(values, v)
		}
	}
	return values
}

// Redact masks the config's secret values in text (RedactWith); text
// unchanged before RedactWith.
func (a *App) Redact(text string) string { return a.secrets.Load().Redact(text) }
