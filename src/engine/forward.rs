//! [`Engine`]'s methods listed once ([`engine_methods!`]), and what is written from that list
//! instead of by hand: [`Forward`], an engine that hands every operation it does not do itself
//! to another engine (the Swarm engine to its manager's daemon, `crate::images`' holds to the
//! engine they wrap); `AnyEngine`'s dispatch to the engine it holds (`choice.rs`); the Docker
//! engine's calls to its methods, one file per concern (`docker/engine.rs`).
//!
//! A method added to [`Engine`] is added to the list below, once: every forwarding engine
//! then hands it on, `AnyEngine` dispatches it, and the Docker engine must have it (a method
//! of the same name in one of its files; without it the build fails). A test reads `api.rs`
//! and this file and fails when the list and the trait differ.

use super::api::Engine;

/// Calls `$then!` with every method of [`Engine`] but `build_image` (its default calls
/// `build_image_with`, so that an engine doing that one itself is never bypassed), each as
/// `async fn name(arguments) -> T;` (the method returns a `Send` future of `T`) or
/// `fn name(arguments) -> T;`, `&self` left out, types by their full paths.
macro_rules! engine_methods {
    ($then:ident) => {
        $then! {
            async fn info() -> Result<$crate::engine::EngineInfo, $crate::engine::EngineError>;
            async fn image_exists(image: &str) -> Result<bool, $crate::engine::EngineError>;
            async fn build_image_with(
                tag: &str,
                context_tar: impl Into<$crate::engine::TarSource> + Send,
                labels: ::std::collections::BTreeMap<String, String>,
                settings: $crate::engine::BuildSettings
            ) -> Result<String, $crate::engine::EngineError>;
            async fn import_image(
                tag: &str,
                rootfs_tar: impl Into<$crate::engine::TarSource> + Send,
                labels: ::std::collections::BTreeMap<String, String>
            ) -> Result<(), $crate::engine::EngineError>;
            async fn tag_image(image: &str, new_name: &str) -> Result<(), $crate::engine::EngineError>;
            async fn pull_image(image: &str) -> Result<(), $crate::engine::EngineError>;
            async fn remove_image(image: &str) -> Result<(), $crate::engine::EngineError>;
            async fn create_hold(
                image: &str,
                labels: ::std::collections::BTreeMap<String, String>
            ) -> Result<String, $crate::engine::EngineError>;
            fn exported() -> Vec<(String, ::std::time::Duration)>;
            fn prepares_ahead() -> bool;
            fn jobs_running() -> Option<usize>;
            async fn run_job(
                job: $crate::engine::JobSpec
            ) -> Result<$crate::engine::JobOutput, $crate::engine::EngineError>;
            async fn list_containers(
                labels: ::std::collections::BTreeMap<String, String>
            ) -> Result<Vec<$crate::engine::Resource>, $crate::engine::EngineError>;
            async fn remove_container(id: &str) -> Result<(), $crate::engine::EngineError>;
            async fn list_images(
                labels: ::std::collections::BTreeMap<String, String>
            ) -> Result<Vec<$crate::engine::Resource>, $crate::engine::EngineError>;
            async fn image_details(
                image: &str
            ) -> Result<Option<$crate::engine::ImageDetails>, $crate::engine::EngineError>;
            fn save_images(
                names: &[String]
            ) -> $crate::engine::ByteStream<$crate::engine::EngineError>;
            async fn load_images(
                archive: $crate::engine::ByteStream<::std::io::Error>
            ) -> Result<Vec<String>, $crate::engine::EngineError>;
            async fn commit_build(
                build: $crate::engine::CommitBuild
            ) -> Result<String, $crate::engine::EngineError>;
            async fn remove_volume(name: &str) -> Result<(), $crate::engine::EngineError>;
            async fn list_volumes(
                labels: ::std::collections::BTreeMap<String, String>
            ) -> Result<Vec<$crate::engine::Resource>, $crate::engine::EngineError>;
            async fn push_image(image: &str) -> Result<(), $crate::engine::EngineError>;
            async fn finish_run() -> Vec<String>;
        }
    };
}
pub(super) use engine_methods;

/// The default methods of [`Forward`]: each calls the same method of [`Forward::to`].
macro_rules! handed_on {
    () => {};
    (async fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty; $($rest:tt)*) => {
        #[doc = concat!("[`Engine::", stringify!($name), "`], by default that of [`Forward::to`].")]
        fn $name(&self $(, $arg: $ty)*) -> impl ::std::future::Future<Output = $ret> + Send {
            Engine::$name(self.to() $(, $arg)*)
        }
        handed_on!($($rest)*);
    };
    (fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty; $($rest:tt)*) => {
        #[doc = concat!("[`Engine::", stringify!($name), "`], by default that of [`Forward::to`].")]
        fn $name(&self $(, $arg: $ty)*) -> $ret {
            Engine::$name(self.to() $(, $arg)*)
        }
        handed_on!($($rest)*);
    };
}

/// The methods of `Engine` for a [`Forward`]: each is the `Forward` method of the same name.
macro_rules! through_forward {
    () => {};
    (async fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty; $($rest:tt)*) => {
        fn $name(&self $(, $arg: $ty)*) -> impl ::std::future::Future<Output = $ret> + Send {
            <Self as Forward>::$name(self $(, $arg)*)
        }
        through_forward!($($rest)*);
    };
    (fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty; $($rest:tt)*) => {
        fn $name(&self $(, $arg: $ty)*) -> $ret {
            <Self as Forward>::$name(self $(, $arg)*)
        }
        through_forward!($($rest)*);
    };
}

/// An engine that hands every [`Engine`] operation to another engine, [`Forward::to`], except
/// those it does itself (it writes those methods in its `impl Forward`): implementing
/// `Forward` implements `Engine`, with the same methods and meanings. Implement it by its path
/// (`impl crate::engine::Forward for W`) rather than importing it: where both traits are in
/// scope, a call such as `w.info()` is ambiguous.
pub trait Forward: Send + Sync + 'static {
    /// The engine the operations go to.
    type To: Engine;
    /// The engine the operations go to.
    fn to(&self) -> &Self::To;
    engine_methods!(handed_on);
}

impl<F: Forward> Engine for F {
    engine_methods!(through_forward);
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// The names of the functions `text` declares (`fn NAME` or `async fn NAME` at a line's
    /// start).
    fn fn_names(text: &str) -> BTreeSet<String> {
        text.lines()
            .filter_map(|l| {
                let l = l.trim_start();
                let l = l.strip_prefix("async ").unwrap_or(l);
                let rest = l.strip_prefix("fn ")?;
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                Some(name)
            })
            .collect()
    }

    /// The list is the trait: a method added to `Engine` and not to `engine_methods!` would be
    /// left to the trait's default by every forwarding engine, silently.
    #[test]
    fn the_list_names_every_method_of_the_engine_trait() {
        let api = include_str!("api.rs");
        let start = api.find("pub trait Engine").expect("the trait in api.rs");
        let trait_body = &api[start..];
        let end = trait_body.find("\n}\n").expect("the trait's end");
        let mut in_trait = fn_names(&trait_body[..end]);
        assert!(in_trait.remove("build_image"), "build_image is derived");
        let this = include_str!("forward.rs");
        let start = this.find("macro_rules! engine_methods").unwrap();
        let list = &this[start..];
        let end = list.find("\n}\n").unwrap();
        let listed = fn_names(&list[..end]);
        assert_eq!(
            listed, in_trait,
            "engine_methods! and the Engine trait differ"
        );
        assert_eq!(listed.len(), 23);
    }
}
