/* Let the saved ipywidgets typeset their labels with the book's MathJax 3.
 *
 * The widget manager (vendor/html-manager/embed.js) typesets every widget label through
 * MathJax 2's API, MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]), whenever window.MathJax
 * exists. The book loads MathJax 3, which has no Hub, so each label threw a TypeError. This gives
 * MathJax 3 the one Hub call the widgets make and answers it with MathJax 3's typesetPromise.
 *
 * It loads beside the widget manager, only on pages with widgets (nb_ipywidgets_js in
 * _config.yml). It waits for DOMContentLoaded: MathJax (a deferred script) has replaced its
 * configuration object with itself by then, and the widgets are drawn later, on "load".
 */
(function () {
  "use strict";

  function typeset(element) {
    var mj = window.MathJax;
    var ready = mj.startup && mj.startup.promise ? mj.startup.promise : Promise.resolve();
    ready
      .then(function () {
        return mj.typesetPromise ? mj.typesetPromise([element]) : null;
      })
      .catch(function (err) {
        console.warn("could not typeset a widget label:", err);
      });
  }

  function install() {
    var mj = window.MathJax;
    // MathJax 3 itself (not its configuration object) has a version string and no Hub
    if (!mj || mj.Hub || typeof mj.version !== "string" || mj.version.charAt(0) !== "3") return;
    mj.Hub = {
      Queue: function () {
        Array.prototype.forEach.call(arguments, function (job) {
          if (Array.isArray(job) && job[0] === "Typeset" && job[2]) typeset(job[2]);
        });
      },
    };
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", install);
  else install();
})();
