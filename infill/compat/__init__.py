"""Drop-in classes for users of other augmentation libraries (:mod:`.nlpaug`)."""
