package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/amp-exporter/amp-exporter/internal/statusline"
)

// statuslineFlags are the flags of `amp-exporter statusline`.
type statuslineFlags struct {
	exporter string
	timeout  time.Duration
	color    bool
	colorSet bool
}

// defaultStatuslineTimeout bounds the whole request: a prompt must not
// wait for an exporter that does not answer.
const defaultStatuslineTimeout = 300 * time.Millisecond

func addStatuslineCommand(app *kingpin.Application, s *statuslineFlags) {
	cmd := app.Command("statusline", "Print one line for a shell prompt or tmux: today's and this month's spend and what is left of the Amp entitlement window, "+
		"from a running exporter; nothing (exit 0) when none answers. See docs/spend.md.")
	cmd.Flag("exporter", "The exporter's URL; a user and password in it are sent as basic auth.").
		Default("http://127.0.0.1" + DefaultListenAddress).StringVar(&s.exporter)
	cmd.Flag("timeout", "Longest wait for the exporter's answer, connecting included.").Default(defaultStatuslineTimeout.String()).DurationVar(&s.timeout)
	cmd.Flag("color", "Color the line (--no-color: never; default: on a terminal, unless NO_COLOR is set).").IsSetByUser(&s.colorSet).BoolVar(&s.color)
}

// runStatusline prints the line, or nothing: a prompt shows no error, and
// an exporter that is not running is not one.
func runStatusline(s statuslineFlags, stdout io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	client := &http.Client{Timeout: s.timeout, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, DisableKeepAlives: true}}
	sum, err := statusline.Fetch(ctx, client, s.exporter)
	if err != nil {
		return 0
	}
	color := colorOn(stdout)
	if s.colorSet {
		color = s.color
	}
	fmt.Fprintln(stdout, statusline.Format(sum, time.Now(), color))
	return 0
}
