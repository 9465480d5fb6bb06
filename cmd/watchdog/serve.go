package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"watchdog/config"
	"watchdog/daemon"
)

func newServeCmd() *cobra.Command {
	var cfgPath, webConfig string
	c := &cobra.Command{
		Use:   "serve [--config FILE] [--web.config.file FILE]",
		Short: "Run the daemon: probe, enforce, reap, serve the API and metrics",
		Long: `Run the daemon. With no config at all it runs on defaults: SQLite ./watchdog.db,
HTTP on 127.0.0.1:9715 (/metrics, /healthz, /readyz, /api/...). SIGHUP reloads
thresholds and schedules; SIGTERM finishes the running job and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// No heap profiles are served, so none are sampled (ADR-0052).
			runtime.MemProfileRate = 0
			cfg, err := config.Load(cfgPath)
			if err != nil {
				where := cfgPath
				if where == "" {
					where = "defaults"
				}
				return fmt.Errorf("config %s: %s", where, strings.ReplaceAll(err.Error(), "\n", "; "))
			}
			if webConfig != "" {
				if webConfig, err = filepath.Abs(webConfig); err != nil {
					return fmt.Errorf("--web.config.file: %w", err)
				}
			}
			log, level, err := daemon.NewLogger(cfg.Log)
			if err != nil {
				return err
			}
			defer log.Sync() //nolint:errcheck // stderr sync fails on terminals; nothing to do

			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)

			return daemon.Run(ctx, daemon.Options{Config: cfg, ConfigPath: cfgPath, Log: log, Level: &level, Version: version, Reload: hup, WebConfigFile: webConfig})
		},
	}
	c.Flags().StringVar(&cfgPath, "config", "", "YAML config file (every key optional; see deploy/config.example.yaml)")
	c.Flags().StringVar(&webConfig, "web.config.file", "", "TLS and basic auth for the TCP port: a web config in prometheus/exporter-toolkit's format (overrides web.config_file)")
	return c
}
