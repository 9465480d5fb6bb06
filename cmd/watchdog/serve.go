package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/sys/unix"

	"watchdog/config"
	"watchdog/daemon"
)

func newServeCmd() *cobra.Command {
	var cfgPath string
	c := &cobra.Command{
		Use:   "serve [--config FILE]",
		Short: "Run the daemon: probe, enforce, reap, serve the API and metrics",
		Long: `Run the daemon. With no config at all it runs on defaults: SQLite ./watchdog.db,
HTTP on 127.0.0.1:9715 (/metrics, /healthz, /readyz, /api/...). SIGHUP reloads
thresholds and schedules; SIGTERM finishes the running job and exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(cfgPath)
			if err != nil {
				where := cfgPath
				if where == "" {
					where = "defaults"
				}
				return fmt.Errorf("config %s: %s", where, strings.ReplaceAll(err.Error(), "\n", "; "))
			}
			log, level, err := newLogger(cfg.Log)
			if err != nil {
				return err
			}
			defer log.Sync() //nolint:errcheck // stderr sync fails on terminals; nothing to do

			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)

			return daemon.Run(ctx, daemon.Options{Config: cfg, ConfigPath: cfgPath, Log: log, Level: &level, Version: version, Reload: hup})
		},
	}
	c.Flags().StringVar(&cfgPath, "config", "", "YAML config file (every key optional; see deploy/config.example.yaml)")
	return c
}

// newLogger builds the zap logger: JSON for journald and files, console
// on a terminal, unless log.format says otherwise. The level it returns
// changes the logger's level on a reload.
func newLogger(l config.Log) (*zap.Logger, zap.AtomicLevel, error) {
	level, err := zapcore.ParseLevel(l.Level)
	if err != nil {
		return nil, zap.AtomicLevel{}, fmt.Errorf("log.level: %w", err)
	}
	format := l.Format
	if format == "" {
		format = "json"
		if isTTY(os.Stderr) {
			format = "console"
		}
	}
	var zc zap.Config
	if format == "console" {
		zc = zap.NewDevelopmentConfig()
	} else {
		zc = zap.NewProductionConfig()
		zc.EncoderConfig.TimeKey = "ts"
		zc.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	}
	// An error-level line means "a human should look" (a store failure, a
	// refused reload), not "the program is broken": a Go stack trace there
	// buries the one sentence that says what to do. Stacks stay for the
	// programmer-error levels.
	zc.DisableStacktrace = true
	zc.Level = zap.NewAtomicLevelAt(level)
	zc.OutputPaths = []string{"stderr"}
	zc.ErrorOutputPaths = []string{"stderr"}
	log, err := zc.Build(zap.AddStacktrace(zapcore.DPanicLevel))
	return log, zc.Level, err
}

// isTTY reports whether f is a terminal (a TCGETS ioctl succeeds).
func isTTY(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
