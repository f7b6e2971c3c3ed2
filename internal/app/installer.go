package app

import "github.com/warden-run/warden/internal/install"

// Installer returns the app's installer: it reviews, fetches, installs,
// syncs and updates modules against the app's config, runtime and loaded
// modules, and reloads the app's config after it edits the file.
func (a *App) Installer() *install.Installer { return a.installer }
