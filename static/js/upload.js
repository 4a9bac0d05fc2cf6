// Upload page: drag and drop onto the drop zone, show the chosen file, refuse a file over the limit early.
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  var input = document.getElementById("file");
  var zone = document.getElementById("dropzone");
  var chosen = document.getElementById("chosen");
  var error = document.getElementById("client-error");
  if (!form || !input || !zone) { return; }

  function check() {
    var file = input.files[0];
    chosen.textContent = file ? file.name + " · " + (file.size / 1048576).toFixed(1) + " MB" : "";
    var tooBig = file && file.size > Number(form.dataset.maxBytes);
    error.hidden = !tooBig;
    error.textContent = tooBig ? form.dataset.tooBig.replace("{size}", (file.size / 1048576).toFixed(1)) : "";
    return !tooBig;
  }
  ["dragenter", "dragover"].forEach(function (name) {
    zone.addEventListener(name, function (event) { event.preventDefault(); zone.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (name) {
    zone.addEventListener(name, function () { zone.classList.remove("over"); });
  });
  zone.addEventListener("drop", function (event) {
    event.preventDefault();
    if (event.dataTransfer.files.length) { input.files = event.dataTransfer.files; check(); }
  });
  input.addEventListener("change", check);
  form.addEventListener("submit", function (event) { if (!check()) { event.preventDefault(); } });
})();
