// Sleuth console: keyboard navigation of the queue and its live notice. No framework,
// no inline handlers (the Content-Security-Policy forbids them): everything is wired
// here, after the page loaded.
"use strict";

(function () {
  function queueRows() {
    return Array.prototype.slice.call(document.querySelectorAll("#queue-table tr.row"));
  }

  // j / k move the selection, Enter opens it; typing in a field is left alone.
  function keyboard() {
    var rows = queueRows();
    if (rows.length === 0) { return; }
    var selected = -1;
    function select(index) {
      if (selected >= 0) { rows[selected].classList.remove("selected"); }
      selected = Math.max(0, Math.min(rows.length - 1, index));
      rows[selected].classList.add("selected");
      rows[selected].scrollIntoView({ block: "nearest" });
    }
    document.addEventListener("keydown", function (event) {
      var target = event.target;
      if (target && /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName)) { return; }
      if (event.ctrlKey || event.metaKey || event.altKey) { return; }
      if (event.key === "j") { select(selected + 1); event.preventDefault(); }
      else if (event.key === "k") { select(selected - 1); event.preventDefault(); }
      else if (event.key === "Enter" && selected >= 0) {
        window.location.assign(rows[selected].getAttribute("data-href"));
      }
    });
    rows.forEach(function (row, index) {
      row.addEventListener("click", function (event) {
        if (event.target.tagName === "A") { return; }
        select(index);
        window.location.assign(row.getAttribute("data-href"));
      });
    });
  }

  // A notice counting investigations that concluded since the page loaded.
  function live() {
    var notice = document.getElementById("live");
    if (!notice || !window.EventSource) { return; }
    var count = 0;
    var source = new EventSource(notice.getAttribute("data-stream") + "?trigger_name=investigation_completed");
    // Marked for tests (and curious analysts): events that arrive from now on count.
    source.addEventListener("open", function () {
      notice.setAttribute("data-state", "open");
    });
    source.addEventListener("investigation_completed", function () {
      count += 1;
      document.getElementById("live-count").textContent = String(count);
      notice.hidden = false;
    });
    document.getElementById("live-refresh").addEventListener("click", function (event) {
      event.preventDefault();
      window.location.reload();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    keyboard();
    live();
  });
})();
