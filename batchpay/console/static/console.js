// batchpay console: plain JavaScript, no framework. Three jobs:
// 1. a form marked data-once is sent once: its buttons are disabled on the first submit
//    (the server refuses a second Pay of a batch whatever happens here);
// 2. a file dropped on the upload area becomes the chosen payout sheet;
// 3. the payment's progress follows the server's events, read from the journal; a page
//    whose review is under way reloads itself until the review is there.
"use strict";

document.addEventListener("submit", function (event) {
  var form = event.target;
  if (!form.hasAttribute("data-once")) { return; }
  if (form.dataset.sent === "yes") { event.preventDefault(); return; }
  form.dataset.sent = "yes";
  // disabled after the submit has taken the button's value
  setTimeout(function () {
    form.querySelectorAll("button").forEach(function (b) { b.disabled = true; });
  }, 0);
});

document.querySelectorAll("[data-drop]").forEach(function (zone) {
  var input = zone.querySelector("input[type=file]");
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (name) {
    zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.remove("over"); });
  });
  zone.addEventListener("drop", function (e) {
    if (e.dataTransfer && e.dataTransfer.files.length) { input.files = e.dataTransfer.files; }
  });
});

function cell(row, text, className) {
  var td = document.createElement("td");
  if (className) {
    var span = document.createElement("span");
    span.className = "status " + className;
    span.textContent = text;
    td.appendChild(span);
  } else {
    td.textContent = text === null || text === undefined ? "" : String(text);
  }
  row.appendChild(td);
}

function fill(tbody, lines, columns) {
  var rows = document.createDocumentFragment();
  lines.forEach(function (line) {
    var tr = document.createElement("tr");
    columns(tr, line);
    rows.appendChild(tr);
  });
  tbody.replaceChildren(rows);
}

var section = document.querySelector("[data-events]");
if (section && window.EventSource) {
  var source = new EventSource(section.getAttribute("data-events"));
  source.addEventListener("progress", function (event) {
    var state = JSON.parse(event.data);
    fill(document.querySelector("#progress-counts tbody"), state.counts, function (tr, c) {
      cell(tr, c[0], c[0]); cell(tr, c[1]);
    });
    fill(document.querySelector("#progress-rows tbody"), state.rows, function (tr, r) {
      cell(tr, r.row); cell(tr, r.payout_ref); cell(tr, r.status, r.status);
      cell(tr, r.reference); cell(tr, r.error);
    });
    if (state.finished || state.stopped) {
      source.close();
      window.location.reload();  // the final page with the results workbook, or Resume payment
    }
  });
}

if (document.querySelector("[data-refresh]")) {
  setTimeout(function () { window.location.reload(); }, 2000);
}
