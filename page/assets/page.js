// watchdog's operator page: follows the daemon's stream of changes
// (GET /events, server-sent events) while the tab is visible and, when
// something it shows changed, re-fetches this page's <main> alone
// (X-Watchdog-Fragment: main) and swaps it in: no reload, no clock (but
// on a fleet's daemon, data-poll: below). A
// hidden tab holds no stream; shown again, it reopens it and catches up
// with one fetch. It folds and unfolds clusters, and sends Snooze and
// Dismiss to the API's own endpoints (POST, application/json): an item's
// advertised body; a whole cluster's listed fingerprints in one request
// (all or none) for the duration chosen beside its button; an entity page
// reason's fingerprint likewise. With auth on (data-auth="token") it asks
// for the token once per tab in a small form on the page that names the
// file holding it, and keeps it in sessionStorage under "watchdog-token".
// Evidence moments are shown in the browser's zone.
(function () {
  "use strict";
  var TOKEN_KEY = "watchdog-token";
  var body = document.body;
  var streamURL = body.getAttribute("data-stream");
  var expanded = {}; // cluster ids the operator unfolded, kept across refreshes
  var chosen = {}; // snooze durations chosen, by cluster id or fingerprint, kept across refreshes
  var inflight = null; // the refresh under way, if any
  var again = false; // a change arrived while a refresh ran: one more follows it

  function setStatus(msg) {
    var el = document.querySelector('[data-testid="status"]');
    if (el) el.textContent = msg || "";
  }

  function setOpen(cluster, open) {
    var items = cluster.querySelector('[data-testid="cluster-items"]');
    var toggle = cluster.querySelector('[data-testid="cluster-toggle"]');
    if (!items || !toggle) return;
    items.hidden = !open;
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
  }

  // scopeOf is the element a duration choice belongs to (a cluster, or an
  // entity page reason's actions) and its key.
  function scopeOf(el) {
    var s = el.closest('[data-testid="cluster"], [data-testid="reason-actions"]');
    if (!s) return null;
    return { el: s, key: s.getAttribute("data-cluster-id") || s.getAttribute("data-fingerprint") };
  }

  function restore(root) {
    root.querySelectorAll('[data-testid="cluster"]').forEach(function (c) {
      if (expanded[c.getAttribute("data-cluster-id")]) setOpen(c, true);
    });
    root.querySelectorAll('[data-testid="snooze-for"]').forEach(function (sel) {
      var s = scopeOf(sel);
      if (s && chosen[s.key]) sel.value = chosen[s.key];
    });
  }

  document.addEventListener("change", function (ev) {
    if (ev.target.getAttribute("data-testid") !== "snooze-for") return;
    var s = scopeOf(ev.target);
    if (s) chosen[s.key] = ev.target.value;
  });

  // bodyOf is the request a button sends: the item's advertised body, or
  // for a cluster or an entity page reason its fingerprints and the
  // chosen duration (seconds from the daemon's now).
  function bodyOf(el, kind) {
    if (kind === "snooze" || kind === "dismiss") return el.getAttribute("data-body");
    var s = scopeOf(el);
    var doc = {};
    if (kind.indexOf("cluster-") === 0) {
      doc.fingerprints = JSON.parse(s.el.getAttribute("data-fingerprints"));
    } else {
      doc.fingerprint = s.key;
    }
    if (/-snooze$/.test(kind)) {
      var sel = s.el.querySelector('[data-testid="snooze-for"]');
      doc["for"] = parseInt(sel.value, 10);
    }
    return JSON.stringify(doc);
  }

  // refresh re-fetches this page's <main> (the server renders the same
  // queue and table as on load) and swaps it in. Changes that arrive
  // while one runs make one more after it, so it reads their effect.
  function refresh() {
    if (inflight) {
      again = true;
      return inflight;
    }
    var stamp = null;
    inflight = fetch(location.href, {
      headers: { Accept: "text/html", "X-Watchdog-Fragment": "main" }, credentials: "same-origin", cache: "no-store"
    })
      .then(function (r) {
        if (!r.ok && r.status !== 400) throw new Error("refresh: HTTP " + r.status);
        stamp = r.headers.get("X-Watchdog-Generated-At");
        return r.text();
      })
      .then(function (html) {
        var t = document.createElement("template");
        t.innerHTML = html;
        var next = document.createElement("main");
        next.id = "live";
        next.appendChild(t.content);
        var cur = document.getElementById("live");
        if (cur) {
          restore(next);
          localTimes(next);
          cur.replaceWith(next);
        }
        var mine = document.querySelector('[data-testid="generated-at"]');
        if (stamp && mine) mine.textContent = "as of " + stamp;
        setStatus("");
      })
      .catch(function (err) { setStatus("cannot reach the daemon: " + err.message); })
      .finally(function () {
        inflight = null;
        if (again) {
          again = false;
          refresh();
        }
      });
    return inflight;
  }

  // shows says whether a change event concerns this page: an entity page
  // shows one entity (and its queue items), the index everything.
  function shows(data) {
    var ent = document.querySelector('[data-testid="entity-page"]');
    if (!ent) return true;
    if (data.more || data.dismissals) return true;
    var key = ent.getAttribute("data-type") + "/" + ent.getAttribute("data-id");
    return (data.entities || []).indexOf(key) >= 0;
  }

  // The stream: open while the tab is visible. EventSource reconnects by
  // itself after a network error; a refusal (503: too many streams, or
  // the daemon stopping) closes it for good, so the page retries later.
  var stream = null;
  var retry = null;
  function openStream() {
    if (stream || !streamURL || !window.EventSource || document.hidden) return;
    stream = new EventSource(streamURL);
    stream.addEventListener("change", function (ev) {
      var data = {};
      try { data = JSON.parse(ev.data); } catch (e) { data = { more: true }; }
      if (shows(data)) refresh();
    });
    stream.onopen = function () { setStatus(""); };
    stream.onerror = function () {
      setStatus("live updates interrupted; reconnecting");
      if (stream && stream.readyState === EventSource.CLOSED) {
        stream = null;
        if (!retry) retry = setTimeout(function () { retry = null; if (openStream()) refresh(); }, 5000);
      }
    };
    return true;
  }
  function closeStream() {
    if (retry) { clearTimeout(retry); retry = null; }
    if (stream) { stream.close(); stream = null; }
  }

  // The token form (data-testid="token-form", outside <main> so that a
  // refresh leaves it be) asks for the token in the page, naming the file
  // it is in; the writes waiting for it resume once it is given, or give
  // up on Cancel. A refused token shows one message there and asks again.
  var waiting = []; // the resolves of the writes waiting for a token

  function tokenForm() { return document.querySelector('[data-testid="token-form"]'); }

  function askToken(message) {
    var form = tokenForm();
    if (!form) return Promise.resolve(null);
    var err = form.querySelector('[data-testid="token-error"]');
    err.textContent = message || "";
    err.hidden = !message;
    form.hidden = false;
    var input = form.querySelector('[data-testid="token-input"]');
    input.value = "";
    input.focus();
    return new Promise(function (resolve) { waiting.push(resolve); });
  }

  function answer(t) {
    var form = tokenForm();
    if (form) form.hidden = true;
    var w = waiting;
    waiting = [];
    w.forEach(function (resolve) { resolve(t); });
  }

  document.addEventListener("submit", function (ev) {
    if (ev.target !== tokenForm()) return;
    ev.preventDefault();
    var form = tokenForm();
    var t = form.querySelector('[data-testid="token-input"]').value.trim();
    if (!t) {
      var err = form.querySelector('[data-testid="token-error"]');
      err.textContent = "Paste the token first.";
      err.hidden = false;
      return;
    }
    sessionStorage.setItem(TOKEN_KEY, t);
    answer(t);
  });

  // The sign-in form (data-testid="login-form", the page a read without
  // credentials gets) trades the token for a session cookie, then loads
  // the page again; the token itself is kept nowhere.
  document.addEventListener("submit", function (ev) {
    var form = document.querySelector('[data-testid="login-form"]');
    if (ev.target !== form) return;
    ev.preventDefault();
    var err = form.querySelector('[data-testid="login-error"]');
    var t = form.querySelector('[data-testid="login-input"]').value.trim();
    function say(msg) { err.textContent = msg; err.hidden = false; }
    if (!t) { say("Paste the token first."); return; }
    fetch("/api/session", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token: t }), credentials: "same-origin" })
      .then(function (r) {
        if (r.status === 204) { location.reload(); return; }
        say(r.status === 401 ? "The daemon refused that token (401)." : "Sign-in failed: HTTP " + r.status);
      }, function (e) { say("Sign-in failed: " + e.message); });
  });

  function tokenFile() {
    var el = document.querySelector('[data-testid="token-file"]');
    return el ? el.textContent : "auth.token_file";
  }

  // post sends one write; with auth on it takes the tab's token, asking
  // for one first when there is none or the daemon refused it. It
  // resolves false when the operator cancelled the form.
  function post(endpoint, payload, refused) {
    var auth = body.getAttribute("data-auth") === "token";
    var t = sessionStorage.getItem(TOKEN_KEY);
    if (auth && (t === null || refused)) {
      var msg = refused ? "The daemon refused that token (401). Copy it again from " + tokenFile() + "." : "";
      return askToken(msg).then(function (given) {
        return given === null ? false : send(given);
      });
    }
    return send(t);

    function send(tok) {
      var headers = { "Content-Type": "application/json" };
      if (tok) headers.Authorization = "Bearer " + tok;
      return fetch(endpoint, { method: "POST", headers: headers, body: payload, credentials: "same-origin" })
        .then(function (r) {
          if (r.status === 401 && auth) {
            sessionStorage.removeItem(TOKEN_KEY);
            return post(endpoint, payload, true);
          }
          if (!r.ok) {
            return r.json().then(function (e) { throw new Error(e.error || "HTTP " + r.status); },
              function () { throw new Error("HTTP " + r.status); });
          }
          return true;
        });
    }
  }

  // localTimes shows each moment of the evidence (<time datetime>) in the
  // browser's zone; the server wrote it in UTC, which stays on hover.
  // Written year first, as the server writes UTC ("2026-11-23 15:02:11
  // CET"): a locale's "11/23/2026" reads differently across the fleet.
  var stampFormat = new Intl.DateTimeFormat("en-US", {
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
    hourCycle: "h23", timeZoneName: "short"
  });
  function localStamp(d) {
    var p = {};
    stampFormat.formatToParts(d).forEach(function (x) { p[x.type] = x.value; });
    return p.year + "-" + p.month + "-" + p.day + " " + p.hour + ":" + p.minute + ":" + p.second + (p.timeZoneName ? " " + p.timeZoneName : "");
  }
  function localTimes(root) {
    root.querySelectorAll('time[data-testid="evidence-time"]').forEach(function (el) {
      var d = new Date(el.getAttribute("datetime"));
      if (isNaN(d.getTime())) return;
      el.textContent = localStamp(d);
    });
  }

  document.addEventListener("click", function (ev) {
    var el = ev.target.closest('[data-testid="cluster-toggle"], [data-testid="snooze"], [data-testid="dismiss"], ' +
      '[data-testid="cluster-snooze"], [data-testid="cluster-dismiss"], [data-testid="reason-snooze"], [data-testid="reason-dismiss"]');
    if (!el) return;
    var kind = el.getAttribute("data-testid");
    if (kind === "cluster-toggle") {
      var cluster = el.closest('[data-testid="cluster"]');
      var open = el.getAttribute("aria-expanded") !== "true";
      expanded[cluster.getAttribute("data-cluster-id")] = open;
      setOpen(cluster, open);
      return;
    }
    // A dismissal has no end: one confirmation, for the item or for the
    // whole cluster at once; a snooze needs none.
    if (/dismiss$/.test(kind) && !window.confirm("Dismiss " + el.getAttribute("data-summary") + "?")) return;
    el.disabled = true;
    post(el.getAttribute("data-endpoint"), bodyOf(el, kind), false)
      .then(function (sent) {
        if (!sent) el.disabled = false; // cancelled: nothing was sent
        return refresh();
      })
      .catch(function (err) { setStatus(kind + " failed: " + err.message); el.disabled = false; });
  });

  var cancel = document.querySelector('[data-testid="token-cancel"]');
  if (cancel) cancel.addEventListener("click", function () { answer(null); });
  localTimes(document);

  // A hidden tab holds no stream; shown again it reopens it and catches
  // up with one fetch (what changed meanwhile was not heard).
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      closeStream();
      return;
    }
    openStream();
    refresh();
  });
  window.addEventListener("pagehide", closeStream);
  window.addEventListener("pageshow", function (ev) {
    if (ev.persisted) { openStream(); refresh(); } // back from the back-forward cache
  });
  openStream();
  // A fleet's daemon streams its own host's changes only (data-poll > 0):
  // the other hosts' rows the page shows are re-fetched on a clock while
  // the tab is visible.
  var pollMs = parseInt(body.getAttribute("data-poll") || "0", 10);
  if (pollMs > 0) setInterval(function () { if (!document.hidden) refresh(); }, pollMs);
})();
