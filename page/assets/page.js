// watchdog's operator page: polls the page every data-poll-seconds while
// the tab is visible (re-fetching the server-rendered HTML and swapping
// <main>), folds and unfolds clusters, and sends Snooze and Dismiss to the
// API's own endpoints (POST, application/json): an item's advertised
// body; a whole cluster's listed fingerprints in one request (all or
// none) for the duration chosen beside its button; an entity page
// reason's fingerprint likewise. With auth on (data-auth="token") it asks
// for the token once per tab and keeps it in sessionStorage under
// "watchdog-token".
(function () {
  "use strict";
  var TOKEN_KEY = "watchdog-token";
  var body = document.body;
  var pollMs = (parseInt(body.getAttribute("data-poll-seconds"), 10) || 10) * 1000;
  var expanded = {}; // cluster ids the operator unfolded, kept across refreshes
  var chosen = {}; // snooze durations chosen, by cluster id or fingerprint, kept across refreshes
  var inflight = null; // the refresh under way, if any

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

  // refresh re-fetches this page and swaps <main>: the server renders
  // the same queue and table as on load.
  // A refresh asked for while one runs (an action's) runs after it, so
  // it reads the action's effect.
  function refresh() {
    if (inflight) return inflight.then(refresh);
    inflight = fetch(location.href, { headers: { Accept: "text/html" }, credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        if (!r.ok && r.status !== 400) throw new Error("refresh: HTTP " + r.status);
        return r.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var next = doc.getElementById("live");
        var cur = document.getElementById("live");
        if (next && cur) {
          restore(next);
          cur.replaceWith(document.adoptNode(next));
        }
        var stamp = doc.querySelector('[data-testid="generated-at"]');
        var mine = document.querySelector('[data-testid="generated-at"]');
        if (stamp && mine) mine.textContent = stamp.textContent;
        setStatus("");
      })
      .catch(function (err) { setStatus("cannot reach the daemon: " + err.message); })
      .finally(function () { inflight = null; });
    return inflight;
  }

  function token(ask) {
    var t = sessionStorage.getItem(TOKEN_KEY);
    if ((t === null || ask) && body.getAttribute("data-auth") === "token") {
      t = window.prompt("watchdog's API token (auth.token_file; kept for this tab only)");
      if (t === null) return null;
      t = t.trim();
      sessionStorage.setItem(TOKEN_KEY, t);
    }
    return t;
  }

  function post(endpoint, payload, retried) {
    var headers = { "Content-Type": "application/json" };
    var t = token(false);
    if (body.getAttribute("data-auth") === "token" && t === null) return Promise.resolve(false);
    if (t) headers.Authorization = "Bearer " + t;
    return fetch(endpoint, { method: "POST", headers: headers, body: payload, credentials: "same-origin" })
      .then(function (r) {
        if (r.status === 401 && !retried) {
          sessionStorage.removeItem(TOKEN_KEY);
          if (token(true) === null) return false;
          return post(endpoint, payload, true);
        }
        if (!r.ok) {
          return r.json().then(function (e) { throw new Error(e.error || "HTTP " + r.status); },
            function () { throw new Error("HTTP " + r.status); });
        }
        return true;
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
      .then(function () { return refresh(); })
      .catch(function (err) { setStatus(kind + " failed: " + err.message); el.disabled = false; });
  });

  setInterval(function () { if (!document.hidden && !inflight) refresh(); }, pollMs);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) refresh(); });
})();
