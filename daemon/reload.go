package daemon

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"watchdog/config"
	"watchdog/store"
)

// recordSettings records the thresholds this daemon judges with, and their
// file, so the commands on this database judge with them too. A failed
// write is logged; the commands then use the config they find.
func (d *daemon) recordSettings(ctx context.Context, path string) {
	doc, err := d.cfg.Thresholds.ThresholdsYAML()
	if err == nil {
		if path != "" {
			if abs, aerr := filepath.Abs(path); aerr == nil {
				path = abs
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		err = d.st.RecordSettings(rctx, d.rp.HostID, store.DaemonSettings{YAML: doc, Source: path, At: time.Now()})
	}
	if err != nil {
		d.log.Warn("recording the settings for the commands on this database; they judge with the config they find", zap.Error(err))
	}
}

// reload re-reads the config file on SIGHUP; what needs a restart is said
// in the log, and an invalid file changes nothing.
func (d *daemon) reload(ctx context.Context, path, webConfig string) {
	d.notify.reloading()
	defer d.notify.ready(d.statusLine())
	next, err := config.Load(path)
	if err != nil {
		d.log.Error("reload refused, keeping the running config", zap.String("config", path), zap.String("error", strings.ReplaceAll(err.Error(), "\n", "; ")))
		return
	}
	if webConfig != "" {
		next.Web.ConfigFile = webConfig
	}
	if next.Store != d.cfg.Store || next.Listen != d.cfg.Listen || next.ListenUnix != d.cfg.ListenUnix || next.Auth.Mode != d.cfg.Auth.Mode ||
		next.Auth.TokenFile != d.cfg.Auth.TokenFile || next.Auth.PublicReads != d.cfg.Auth.PublicReads || !slices.Equal(next.AllowedHosts, d.cfg.AllowedHosts) ||
		next.HostID != d.cfg.HostID || next.Log.Format != d.cfg.Log.Format || next.HTTP != d.cfg.HTTP || next.Web != d.cfg.Web || next.ProcessTree != d.cfg.ProcessTree {
		d.log.Warn("store, listen, listen_unix, allowed_hosts, auth (but its tokens), host_id, log.format, http, web.config_file (not the file's content, read for each connection) and process_tree changes need a restart; applying the rest")
	}
	d.reloadTokens(next.Auth)
	// A job stuck past reloadJobWait postpones the reload rather than block
	// the main loop, and with it SIGTERM.
	if !d.sched.StopWithin(reloadJobWait) {
		d.sched.Start()
		d.log.Error("reload postponed: a job is still running; keeping the running config (send SIGHUP again once it is done)",
			zap.String("config", path), zap.Duration("waited", reloadJobWait))
		return
	}
	old := d.cfg
	d.cfg = next
	d.cfg.Store, d.cfg.Listen, d.cfg.ListenUnix, d.cfg.HostID, d.cfg.AllowedHosts, d.cfg.HTTP = old.Store, old.Listen, old.ListenUnix, old.HostID, old.AllowedHosts, old.HTTP
	d.cfg.Auth.Mode, d.cfg.Auth.TokenFile, d.cfg.Auth.PublicReads = old.Auth.Mode, old.Auth.TokenFile, old.Auth.PublicReads
	rs := ReaperSettings(d.cfg)
	d.live.setSettings(d.rp, rs)
	d.requireHB.Store(&rs.Thresholds.RequireHeartbeat)
	if err := d.schedule(ctx); err != nil {
		// Validated by config.Load, so unexpected: keep the old schedule, not none.
		d.log.Error("reschedule failed, restoring the old config", zap.Error(err))
		d.cfg = old
		rs := ReaperSettings(old)
		d.live.setSettings(d.rp, rs)
		d.requireHB.Store(&rs.Thresholds.RequireHeartbeat)
		if err := d.schedule(ctx); err != nil {
			d.log.Error("restore failed", zap.Error(err))
			return
		}
	}
	d.recordSettings(ctx, path)
	d.api.SetFailureWindow(time.Duration(d.cfg.Thresholds.FailureWindow))
	d.page.SetRunbookURL(d.cfg.Alertmanager.RunbookURL)
	d.api.SetRunbookURL(d.cfg.Alertmanager.RunbookURL)
	d.reloadPush()
	if d.level != nil {
		if l, err := zapcore.ParseLevel(d.cfg.Log.Level); err == nil {
			d.level.SetLevel(l)
		}
	}
	d.sched.Start()
	d.log.Info("config reloaded", zap.String("config", path))
}
