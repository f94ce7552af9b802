package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/version"

	"github.com/amp-exporter/amp-exporter/config"
	"github.com/amp-exporter/amp-exporter/source/workspace/api"
	"github.com/amp-exporter/amp-exporter/source/workspace/check"
)

// workspaceFlags are the flags of `amp-exporter workspace check`.
type workspaceFlags struct {
	timeout time.Duration
}

func addWorkspaceCommand(app *kingpin.Application, w *workspaceFlags) {
	ws := app.Command("workspace", "Amp's workspace API (Amp Enterprise; see docs/workspace.md).")
	chk := ws.Command("check", "With the credentials of the configuration's amp_workspace section, fetch a token and one page of each endpoint, "+
		"and print what came back against what the exporter expects; exit 1 when it cannot be counted, 2 when nothing could be asked.")
	chk.Flag("timeout", "Longest the whole check may take.").Default("2m").DurationVar(&w.timeout)
}

func runWorkspaceCheck(f *flags, stdout, stderr io.Writer) int {
	cfg, err := config.Load(f.configFile, config.OSEnv())
	if err != nil {
		fmt.Fprintf(stderr, "amp-exporter workspace check: %v\n", err)
		return 2
	}
	w := cfg.Workspace
	if w.ClientID == "" || w.ClientSecret == "" {
		fmt.Fprintln(stderr, "amp-exporter workspace check: no credentials: set amp_workspace.client_id and client_secret_file or client_secret_env (--config.file)")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, f.workspace.timeout)
	defer cancel()
	o := api.OptionsFrom(w)
	o.Version = version.Version
	r, err := check.Run(ctx, check.Options{Client: o, Scopes: w.Scopes, PageSize: w.PageSize, Now: time.Now()})
	if err != nil {
		fmt.Fprintf(stderr, "amp-exporter workspace check: %v\n", err)
		return 2
	}
	if err := r.Write(stdout); err != nil {
		return 2
	}
	if !r.Countable() {
		return 1
	}
	return 0
}
