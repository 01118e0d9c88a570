// Posttrain console: progressive enhancement only. Every page works without this file;
// with it, uploads show progress, job and file pages update live, and the new-job form
// shows its estimate and tests graders in place. Served from our own origin (CSP 'self').
(function () {
  "use strict";

  function csrfToken(form) {
    var field = (form || document).querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  // Confirmation before destructive actions (forms with data-confirm).
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
      event.preventDefault();
    }
  });

  // Upload with a progress bar.
  function setupUpload(form) {
    var bar = form.querySelector("progress");
    var status = form.querySelector("[role=status]");
    form.addEventListener("submit", function (event) {
      var input = form.querySelector("input[type=file]");
      if (!input.files.length) { return; }
      event.preventDefault();
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.action);
      xhr.setRequestHeader("X-Requested-With", "XMLHttpRequest");
      xhr.setRequestHeader("X-CSRFToken", csrfToken(form));
      bar.hidden = false;
      bar.value = 0;
      status.textContent = "Uploading…";
      xhr.upload.addEventListener("progress", function (e) {
        if (e.lengthComputable) {
          bar.value = Math.round((e.loaded / e.total) * 100);
          status.textContent = "Uploading… " + bar.value + "%";
        }
      });
      xhr.addEventListener("load", function () {
        var body = {};
        try { body = JSON.parse(xhr.responseText); } catch (err) { body = {}; }
        if (xhr.status === 200 && body.url) {
          status.textContent = "Uploaded; validating…";
          window.location.assign(body.url);
        } else {
          status.textContent = body.error || ("Upload failed (HTTP " + xhr.status + ")");
          status.className = "error";
        }
      });
      xhr.addEventListener("error", function () {
        status.textContent = "Upload failed: the connection was lost";
        status.className = "error";
      });
      xhr.send(new FormData(form));
    });
  }

  // Regions that re-fetch themselves until the server says they are done.
  function setupLive(region) {
    var url = region.dataset.liveUrl;
    function tick() {
      fetch(url, { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
        .then(function (response) {
          var done = response.headers.get("X-Live-Done") === "1";
          return response.text().then(function (html) {
            if (response.ok) { region.innerHTML = html; }
            if (done) {
              region.removeAttribute("data-live-url");
              // Buttons (cancel, pause) depend on the final status: refresh the page once.
              window.location.reload();
            } else {
              window.setTimeout(tick, 2000);
            }
          });
        })
        .catch(function () { window.setTimeout(tick, 5000); });
    }
    window.setTimeout(tick, 1500);
  }

  // New-job form: method-specific fieldsets, the live estimate, the grader tester.
  function setupJobForm(form) {
    var method = form.querySelector("#id_method");
    function showMethod() {
      form.querySelectorAll("fieldset[data-method]").forEach(function (fieldset) {
        fieldset.hidden = fieldset.dataset.method !== method.value;
      });
    }
    method.addEventListener("change", showMethod);
    showMethod();

    var target = document.getElementById("estimate");
    var timer = null;
    var seq = 0;
    function refresh() {
      var mine = ++seq;
      var data = new FormData(form);
      fetch(form.dataset.estimateUrl, {
        method: "POST", body: data, credentials: "same-origin",
        headers: { "X-CSRFToken": csrfToken(form) }
      }).then(function (r) { return r.text(); }).then(function (html) {
        if (mine === seq) { target.innerHTML = html; }
      });
    }
    form.addEventListener("input", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(refresh, 500);
    });
    form.addEventListener("change", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(refresh, 150);
    });
    refresh();

    var button = document.getElementById("grader-test");
    if (button) {
      button.addEventListener("click", function () {
        var data = new FormData();
        data.append("grader", form.querySelector("#id_grader").value);
        data.append("sample", document.getElementById("grader-sample").value);
        data.append("item", document.getElementById("grader-item").value);
        var out = document.getElementById("grader-result");
        out.textContent = "Running…";
        fetch(button.dataset.url, {
          method: "POST", body: data, credentials: "same-origin",
          headers: { "X-CSRFToken": csrfToken(form) }
        }).then(function (r) { return r.text(); }).then(function (html) { out.innerHTML = html; });
      });
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("form[data-upload]").forEach(setupUpload);
    document.querySelectorAll("[data-live-url]").forEach(setupLive);
    var jobForm = document.getElementById("job-form");
    if (jobForm) { setupJobForm(jobForm); }
  });
})();
