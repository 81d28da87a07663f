// Optional comfort: the report reads the same with scripts off (it is built on <details>).
// Print unfolds every entry; the buttons fold or unfold a whole timeline.
(function () {
  "use strict";
  var all = function (root, open) {
    root.querySelectorAll("details").forEach(function (d) { d.open = open; });
  };
  document.querySelectorAll(".harness-timeline > header").forEach(function (header) {
    var bar = document.createElement("div");
    bar.className = "toolbar";
    [["unfold all", true], ["fold all", false]].forEach(function (pair) {
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = pair[0];
      button.addEventListener("click", function () { all(header.parentNode, pair[1]); });
      bar.appendChild(button);
    });
    header.insertBefore(bar, header.firstChild);
  });
  window.addEventListener("beforeprint", function () { all(document, true); });
})();
