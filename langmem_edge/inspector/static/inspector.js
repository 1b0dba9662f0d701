// langmem-edge inspector: the only script the pages run (the Content-Security-Policy allows
// no other). Forms marked data-confirm ask before they submit.
"use strict";
document.addEventListener("submit", function (event) {
  var form = event.target;
  var question = form.getAttribute && form.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});
