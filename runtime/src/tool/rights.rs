//! Who may run a tool: [`Rights`], declared the same way for a compiled, dynamic or remote tool and
//! for a remote server's default, and [`Admission`], the part of them a listing reads per tool.

use crate::caller::Caller;

/// Who may run a tool: anyone (`public`), or a caller holding every one of its `abilities`; and, for a
/// tool whose backend checks each caller's rights itself (`downstream`), only a caller with an identity.
/// A tool that declares none of them is run by no one.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Rights {
    public: bool,
    abilities: Vec<String>,
    downstream: bool,
}

impl Rights {
    /// Anyone may run it.
    pub(crate) fn public(&mut self) {
        self.public = true;
    }

    /// Callers need `ability`, besides those required already.
    pub(crate) fn ability(&mut self, ability: String) {
        self.abilities.push(ability);
    }

    /// Callers need each of `abilities` too, as an operator requires them: a public tool is public no
    /// longer.
    pub(crate) fn require(&mut self, abilities: impl IntoIterator<Item = String>) {
        self.public = false;
        self.abilities.extend(abilities);
    }

    /// Its backend checks each caller's rights itself.
    pub(crate) fn enforced_downstream(&mut self) {
        self.downstream = true;
    }

    pub(crate) fn is_public(&self) -> bool {
        self.public
    }

    pub(crate) fn abilities(&self) -> &[String] {
        &self.abilities
    }

    pub(crate) fn is_enforced_downstream(&self) -> bool {
        self.downstream
    }

    /// Whether someone said who may run it.
    #[cfg(feature = "remote")]
    pub(crate) fn decided(&self) -> bool {
        self.public || !self.abilities.is_empty() || self.downstream
    }

    /// Whether it says who may run it in one way only: public, or restricted (by abilities, or to
    /// callers with an identity), as an application's own tool must.
    pub(crate) fn declared_once(&self) -> bool {
        self.public != (!self.abilities.is_empty() || self.downstream)
    }

    /// These rights, with `other`'s downstream mark.
    #[cfg(feature = "remote")]
    pub(crate) fn with_downstream_of(&self, other: &Rights) -> Rights {
        Rights {
            downstream: self.downstream || other.downstream,
            ..self.clone()
        }
    }

    /// Its part of the default rule that needs no abilities' names.
    pub(crate) fn admission(&self) -> Admission {
        Admission {
            public: self.public,
            downstream: self.downstream,
        }
    }

    /// The default rule: public, or the caller holds every required ability (and, for a tool whose
    /// rights are enforced downstream, has an identity).
    pub(crate) fn allow(&self, caller: &Caller) -> bool {
        let admission = self.admission();
        admission.admits(caller)
            && admission.allows_holding(self.abilities.iter().map(|a| caller.has(a)))
    }
}

/// A tool's `public` and `downstream` marks: what the default rule reads of it besides its abilities.
/// Each snapshot keeps a copy in each tool's `Visibility`, so that a listing of many tools reads them
/// from the snapshot's one vector rather than from each tool's own allocation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Admission {
    public: bool,
    downstream: bool,
}

impl Admission {
    /// Whether `caller` may be let through to a backend that checks rights itself: with an identity.
    #[inline]
    pub(crate) fn admits(self, caller: &Caller) -> bool {
        !self.downstream || identified(caller)
    }

    /// The default rule, given whether the caller holds each of the tool's abilities, in order.
    pub(crate) fn allows_holding(self, mut abilities_held: impl Iterator<Item = bool>) -> bool {
        self.public || abilities_held.all(|holds| holds)
    }
}

/// Whether `caller` has an identity; out of line, so that the common path, of tools whose rights are not
/// enforced downstream, never compares the id.
#[cold]
#[inline(never)]
fn identified(caller: &Caller) -> bool {
    !caller.is_anonymous()
}
