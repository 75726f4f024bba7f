// Search on a site opened from disk (file://). The index is a script and loads, so results work;
// the snippets under each result would be fetched page by page, which browsers refuse for file://
// URLs (one CORS error per result). So, from disk, list the results without snippets and say
// how to get them. Loaded on search.html only, after documentation_options.js.
(function () {
  "use strict";
  if (window.location.protocol !== "file:") return;
  if (typeof DOCUMENTATION_OPTIONS !== "undefined") DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
  function note() {
    const form = document.querySelector("#search-results") || document.querySelector(".bd-article");
    if (!form || document.querySelector(".roofline-search-note")) return;
    const p = document.createElement("p");
    p.className = "roofline-search-note";
    const code = document.createElement("code");
    code.textContent = "make serve";
    p.append("This copy of the site was opened from disk, so results are listed without snippets. " +
      "For snippets, serve it: run ", code, " and open http://127.0.0.1:8000.");
    form.parentNode.insertBefore(p, form);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", note);
  else note();
})();
