// warden console: live lists. Each element with data-live names a
// server-sent events stream; on every "change" event the element's
// content is fetched again from data-list (server-rendered HTML).
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("[data-live]").forEach(function (el) {
    var pending = false, again = false;
    function refresh() {
      if (pending) { again = true; return; }
      pending = true;
      fetch(el.dataset.list, { credentials: "same-origin", cache: "no-store" })
        .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.text(); })
        .then(function (html) { el.innerHTML = html; el.dataset.updated = String(Date.now()); })
        .catch(function () { el.dataset.stale = "true"; })
        .finally(function () { pending = false; if (again) { again = false; refresh(); } });
    }
    var es = new EventSource(el.dataset.live);
    es.addEventListener("change", refresh);
    es.addEventListener("open", function () { document.body.dataset.live = "open"; });
  });
});
