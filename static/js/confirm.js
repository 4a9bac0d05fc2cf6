// Forms that end something for good (revoking a share link, deleting) ask first: <form data-confirm="question">.
document.addEventListener("submit", function (event) {
  var question = event.target.getAttribute && event.target.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
