// The console's only script (served by the node; the CSP forbids inline script).
// 1. Forms marked data-confirm ask first.  2. A region marked data-live follows its server-sent
// events and, on each, re-reads the page and swaps in that region as the server rendered it.
"use strict";
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) { event.preventDefault(); }
});
document.addEventListener("DOMContentLoaded", function () {
  var region = document.querySelector("[data-live]");
  if (!region || !window.EventSource) { return; }
  var source = new EventSource(region.getAttribute("data-live"));
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(window.location.href, { credentials: "same-origin" })
      .then(function (response) { return response.text(); })
      .then(function (text) {
        var page = new DOMParser().parseFromString(text, "text/html");
        var fresh = page.querySelector("[data-live]");
        if (fresh) { region.replaceChildren.apply(region, Array.from(fresh.childNodes)); }
      })
      .finally(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }
  source.addEventListener("message", refresh);
  source.addEventListener("end", function () { source.close(); refresh(); });
});
