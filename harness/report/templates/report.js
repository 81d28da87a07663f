// Optional comfort: the report reads the same with scripts off (it is built on <details>).
// The buttons fold or unfold a whole timeline, or show only what the oracle objects to;
// printing unfolds every entry.
(function () {
  "use strict";
  var all = function (root, open) {
    root.querySelectorAll("details").forEach(function (d) { d.open = open; });
  };
  document.querySelectorAll(".harness-timeline > header").forEach(function (header) {
    var timeline = header.parentNode;
    var bar = document.createElement("div");
    bar.className = "toolbar";
    var add = function (label, act) {
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = label;
      button.addEventListener("click", function () { act(button); });
      bar.appendChild(button);
    };
    add("unfold all", function () { all(timeline, true); });
    add("fold all", function () { all(timeline, false); });
    if (timeline.querySelector(".entry.violation")) {
      add("only what the oracle objects to", function (button) {
        var on = timeline.classList.toggle("only-problems");
        button.setAttribute("aria-pressed", on ? "true" : "false");
      });
    }
    header.insertBefore(bar, header.firstChild);
  });
  window.addEventListener("beforeprint", function () { all(document, true); });
})();
